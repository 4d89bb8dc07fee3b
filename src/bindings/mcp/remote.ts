// An Agora agent at a URL as a receiver: what `agora mcp <agent-url>` exposes over stdio for an agent without an MCP
// face. Each call is one HTTP exchange (with the agent's token), bounded in time and size, and every reply is read
// through the wire's schemas. A failure says what failed (`agent at http://…/ answered 401: Unauthorized`, `… answered:
// Routine failed`); an Agora refusal comes with HTTP 200, so that status is never shown.
import { z } from 'zod';
import { AgoraError, FIXED_MESSAGES, type AgoraErrorCode } from '../../errors.js';
import { HttpClient } from '../../net/client.js';
import type { TokenSource } from '../../net/token-source.js';
import type { ReceiverApi } from '../../receiver.js';
import {
  peerResponseSchema,
  wellknownSchema,
  type FollowUpRequest,
  type QueryRequest,
  type SuccessResponse,
} from '../../schemas.js';
import { peerText, shownUrl } from './_wording.js';

/** Options of {@link remoteReceiver}. */
export type RemoteOptions = {
  /** Bearer token the agent asks for. */
  token?: string;
  /** Where a renewed token comes from (client credentials), sent to the agent's origin only; wins over `token`. */
  tokenSource?: TokenSource;
  /** Longest exchange, ms (default 60 000). */
  timeoutMs?: number;
  /** Largest reply read, bytes (default 4 MiB). */
  maxReplyBytes?: number;
  fetch?: typeof fetch;
};

/**
 * The receiver of the Agora agent at `url`, over its HTTP wire: `POST /`, `POST /conversations/:id`,
 * `DELETE /conversations/:id`, `GET /wellknown`, `GET /protocols/:hash`.
 * @example const receiver = remoteReceiver('http://localhost:3000', { token: process.env.AGORA_TOKEN });
 */
export function remoteReceiver(url: string, options: RemoteOptions = {}): ReceiverApi {
  const base = url.replace(/\/+$/, '');
  // The agent's page a failure names: its URL (without credentials) and the path asked.
  const at = (path: string) => `agent at ${shownUrl(`${base}${path}`)}`;
  // The one outbound client: the body read under the same bound, refused past the size cap whether declared or
  // streamed; the token sent to the agent's origin only.
  const client = new HttpClient({
    fetch: options.fetch,
    token: options.token,
    tokenSource: options.tokenSource,
    tokenOrigin: base,
    timeoutMs: options.timeoutMs ?? 60_000,
    maxReplyBytes: options.maxReplyBytes ?? 4 * 1024 * 1024,
    describe: (reason, request) => `agent at ${shownUrl(request.url)}: ${reason}`,
  });

  async function exchange(
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<{ status: number; text: string }> {
    const reply = await client.request(method, `${base}${path}`, { json: body, signal });
    return { status: reply.status, text: reply.bytes.toString('utf8') };
  }

  function parse<T>(schema: z.ZodType<T>, path: string, text: string, status: number): T {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new AgoraError(
        'PEER_FAILURE',
        `${at(path)} answered ${status === 200 ? '' : `${status} `}with something that is not JSON: ${peerText(text)}`,
        { status },
      );
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success)
      throw new AgoraError(
        'PEER_FAILURE',
        `${at(path)} answered ${status === 200 ? '' : `${status} `}with something that is not an Agora reply: ${peerText(z.prettifyError(parsed.error))}`,
        { status },
      );
    return parsed.data;
  }

  async function reply(
    path: string,
    request: QueryRequest | FollowUpRequest,
    signal?: AbortSignal,
  ): Promise<SuccessResponse> {
    const { status, text } = await exchange('POST', path, request, signal);
    const answer = parse(peerResponseSchema, path, text, status);
    if (answer.status === 'success') return answer as SuccessResponse;
    const message = peerText(answer.status === 'failure' ? answer.error : answer.message);
    if (status === 404 && /conversation/i.test(message)) throw new AgoraError('CONVERSATION_NOT_FOUND', message);
    // An Agora refusal comes with 200 (its status says nothing) or with the status of an HTTP refusal (401, 429…).
    const said = status >= 200 && status < 300 ? `answered: ${message}` : `answered ${status}: ${message}`;
    throw new AgoraError(codeOf(message), `${at(path)} ${said}`, { status });
  }

  return {
    query: (request, context) => reply('/', request, context?.signal),
    followUp: (id, request, context) => reply(`/conversations/${encodeURIComponent(id)}`, request, context?.signal),
    async end(id) {
      await exchange('DELETE', `/conversations/${encodeURIComponent(id)}`);
    },
    async wellknown() {
      const { status, text } = await exchange('GET', '/wellknown');
      if (status !== 200)
        throw new AgoraError('PEER_FAILURE', `${at('/wellknown')} answered ${status}: ${peerText(text)}`, { status });
      return parse(wellknownSchema, '/wellknown', text, status);
    },
    async document(hash) {
      const { status, text } = await exchange('GET', `/protocols/${hash}`);
      return status === 200 ? text : undefined;
    },
    async metrics() {
      return '';
    },
    // Over the wire it answers whole replies, and says nothing of its health or routines.
    capabilities: {},
  };
}

// The code of an Agora refusal whose text is one of the spec's fixed ones (`Routine failed`), else PEER_FAILURE.
function codeOf(message: string): AgoraErrorCode {
  for (const [code, text] of Object.entries(FIXED_MESSAGES)) if (text === message) return code as AgoraErrorCode;
  return 'PEER_FAILURE';
}
