// Reading a reply's body under a size cap, declared or streamed: a lying peer's body is never buffered whole.
import { AgoraError } from '../errors.js';
import { tooLarge, type Wording } from './failure.js';

/**
 * Reads a reply's body, refusing one larger than `maxBytes` (declared or streamed); `what` names the request
 * (`GET http://host/x`), or words the failure from its reason.
 */
export async function readCapped(response: Response, maxBytes: number, what: string | Wording): Promise<Buffer> {
  const words = typeof what === 'string' ? (reason: string) => `${what}: ${reason}` : what;
  const refuse = () => new AgoraError('PEER_FAILURE', words(tooLarge(maxBytes)), { status: response.status });
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw refuse();
  }
  if (!response.body) return Buffer.alloc(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw refuse();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size);
}
