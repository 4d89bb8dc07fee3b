// One ROAR message over the agent's WebSocket (`/roar/ws`): `delta` frames while the agent streams (our agents send
// them only when asked, `?deltas=true`), then the reply ROARMessage as one frame (marked `"type": "done"` by our
// agents after deltas, bare from ROAR's own router; an older `{"type":"done","message":…}` wrapper is read too). A
// refusal is an error frame: `{"type":"error","error":code,…}` from ours, `{"error":code}` from ROAR's router. `ws`
// is loaded only when a socket is opened.
import { AgoraError } from '../../errors.js';
import type { LosslessValue } from './canonical.js';
import { parseRoarText } from './client-message.js';

/** Bounds and credentials of one socket exchange. */
export type RoarSocketOptions = {
  timeoutMs: number;
  maxBytes: number;
  headers: Record<string, string>;
  deltas?: boolean;
  signal?: AbortSignal;
};

/** A piece of the exchange: a delta of the answer, or the reply message (read losslessly, to verify it). */
export type RoarSocketPiece = { type: 'delta'; delta: string } | { type: 'message'; message: LosslessValue };

type Frame = { type?: unknown; delta?: unknown; error?: unknown; message?: unknown; intent?: unknown };

/** Sends `text` on a new socket to `base`'s `/roar/ws` and yields what comes back, ending with the reply. */
export async function* roarSocketExchange(
  base: string,
  text: string,
  options: RoarSocketOptions,
): AsyncGenerator<RoarSocketPiece> {
  // `?deltas=true` asks our agents for delta frames (without it they send the reply frame only); ROAR's router ignores
  // the query.
  const url = `${base.replace(/^http/, 'ws')}/roar/ws${options.deltas === false ? '' : '?deltas=true'}`;
  const what = `WebSocket ${url}`;
  const { WebSocket } = await import('ws');
  const socket = new WebSocket(url, {
    headers: options.headers,
    maxPayload: options.maxBytes,
    handshakeTimeout: options.timeoutMs,
  });
  const frames: string[] = [];
  let failure: AgoraError | undefined;
  let closed = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    const resume = wake;
    wake = undefined;
    resume?.();
  };
  socket.on('message', (data, isBinary) => {
    frames.push(isBinary ? '' : data.toString());
    notify();
  });
  socket.on('error', (error) => {
    failure ??= new AgoraError('PEER_FAILURE', `${what}: ${error.message}`, { cause: error });
    notify();
  });
  socket.on('close', () => {
    closed = true;
    notify();
  });
  const onAbort = () => {
    failure ??= new AgoraError('PEER_FAILURE', `${what}: aborted`);
    socket.terminate();
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const next = async (): Promise<string | undefined> => {
    for (;;) {
      if (frames.length > 0) return frames.shift();
      if (failure) throw failure;
      if (closed) return undefined;
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await new Promise<boolean>((resolve) => {
        wake = () => resolve(false);
        timer = setTimeout(() => resolve(true), options.timeoutMs);
      });
      clearTimeout(timer);
      if (timedOut) throw new AgoraError('TIMEOUT', `${what}: nothing received for ${options.timeoutMs} ms`);
    }
  };
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', (error) =>
        reject(new AgoraError('PEER_FAILURE', `${what}: ${error.message}`, { cause: error })),
      );
      socket.once('unexpected-response', (_request, response) =>
        reject(
          new AgoraError('PEER_FAILURE', `${what}: HTTP ${response.statusCode}`, { status: response.statusCode ?? 0 }),
        ),
      );
    });
    // A token goes in the upgrade's Authorization header (the headers), which our agents take for the auth frame.
    socket.send(text);
    for (;;) {
      const raw = await next();
      if (raw === undefined) throw new AgoraError('PEER_FAILURE', `${what}: closed before the reply`);
      let frame: Frame;
      try {
        frame = JSON.parse(raw) as Frame;
      } catch {
        throw new AgoraError('PEER_FAILURE', `${what}: a frame that is not JSON`);
      }
      if (typeof frame !== 'object' || frame === null)
        throw new AgoraError('PEER_FAILURE', `${what}: a frame that is not a JSON object`);
      if (frame.type === 'delta') {
        if (typeof frame.delta === 'string') yield { type: 'delta', delta: frame.delta };
        continue;
      }
      // ROAR's own router refuses with a bare `{"error": "signature_invalid"}` frame (roar_sdk `router.py`); ours add
      // `"type": "error"`.
      if (frame.type === 'error' || (typeof frame.error === 'string' && frame.intent === undefined)) {
        const code = typeof frame.error === 'string' && /^[\w.-]{1,60}$/.test(frame.error) ? ` (${frame.error})` : '';
        throw new AgoraError('PEER_FAILURE', `${what}: the agent refused the message${code}`);
      }
      if (typeof frame.intent === 'string') {
        yield { type: 'message', message: parseRoarText(raw, what) };
        return;
      }
      if (frame.type === 'done' && typeof frame.message === 'object' && frame.message !== null) {
        const wrapped = parseRoarText(raw, what) as { message: LosslessValue };
        yield { type: 'message', message: wrapped.message };
        return;
      }
      // Anything else (a heartbeat, an extension's frame) is not ours to read.
    }
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    if (socket.readyState === socket.OPEN || socket.readyState === socket.CONNECTING) socket.terminate();
  }
}
