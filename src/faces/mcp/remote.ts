// An Agora agent at a URL as a receiver: what `agora mcp <agent-url>` exposes over stdio. Each call is one HTTP
// exchange (with the agent's token), bounded in time and size, and every reply is read through the wire's schemas.
import { z } from 'zod';
import { AgoraError } from '../../errors.js';
import type { ReceiverApi } from '../../receiver.js';
import { peerResponseSchema, wellknownSchema, type FollowUpRequest, type QueryRequest, type SuccessResponse } from '../../schemas.js';

/** Options of {@link remoteReceiver}. */
export type RemoteOptions = {
  /** Bearer token the agent asks for. */
  token?: string;
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
  const timeoutMs = options.timeoutMs ?? 60_000;
  const maxReplyBytes = options.maxReplyBytes ?? 4 * 1024 * 1024;
  const fetcher = options.fetch ?? fetch;

  async function exchange(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<{ status: number; text: string }> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const timeout = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      response = await fetcher(`${base}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}), signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
    } catch (error) {
      const reason = timeout.aborted ? `no answer within ${timeoutMs} ms` : error instanceof Error ? error.message : String(error);
      throw new AgoraError('PEER_FAILURE', `${method} ${base}${path}: ${reason}`, { cause: error });
    }
    const declared = Number(response.headers.get('content-length') ?? 0);
    const bytes = declared > maxReplyBytes ? undefined : Buffer.from(await response.arrayBuffer());
    if (bytes === undefined || bytes.length > maxReplyBytes) throw new AgoraError('PEER_FAILURE', `${method} ${base}${path}: reply over ${maxReplyBytes} bytes`);
    return { status: response.status, text: bytes.toString('utf8') };
  }

  function parse<T>(schema: z.ZodType<T>, what: string, text: string, status: number): T {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new AgoraError('PEER_FAILURE', `${what}: HTTP ${status}, not JSON: ${text.slice(0, 200)}`, { status });
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success) throw new AgoraError('PEER_FAILURE', `${what}: HTTP ${status}, not an Agora reply: ${z.prettifyError(parsed.error)}`, { status });
    return parsed.data;
  }

  async function reply(path: string, request: QueryRequest | FollowUpRequest, signal?: AbortSignal): Promise<SuccessResponse> {
    const { status, text } = await exchange('POST', path, request, signal);
    const answer = parse(peerResponseSchema, `POST ${base}${path}`, text, status);
    if (answer.status === 'success') return answer as SuccessResponse;
    const message = answer.status === 'failure' ? answer.error : answer.message;
    if (status === 404 && /conversation/i.test(message)) throw new AgoraError('CONVERSATION_NOT_FOUND', message);
    throw new AgoraError('PEER_FAILURE', `POST ${base}${path}: HTTP ${status}: ${message}`, { status });
  }

  return {
    query: (request, context) => reply('/', request, context?.signal),
    followUp: (id, request, context) => reply(`/conversations/${encodeURIComponent(id)}`, request, context?.signal),
    async end(id) {
      await exchange('DELETE', `/conversations/${encodeURIComponent(id)}`);
    },
    async wellknown() {
      const { status, text } = await exchange('GET', '/wellknown');
      if (status !== 200) throw new AgoraError('PEER_FAILURE', `GET ${base}/wellknown: HTTP ${status}: ${text.slice(0, 200)}`, { status });
      return parse(wellknownSchema, `GET ${base}/wellknown`, text, status);
    },
    async document(hash) {
      const { status, text } = await exchange('GET', `/protocols/${hash}`);
      return status === 200 ? text : undefined;
    },
    async metrics() {
      return '';
    },
  };
}
