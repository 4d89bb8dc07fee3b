// Shared by the HTTP tests: a receiver steered from the request, a memory logger and a fetch helper.
import { AgoraError, type AgoraErrorCode } from '../../src/errors.js';
import { hashText } from '../../src/protocol/document.js';
import type { ReceiverApi, RequestContext } from '../../src/receiver.js';
import type { FollowUpRequest, QueryRequest, SuccessResponse } from '../../src/schemas.js';

// Spec §1 golden vector (LF), and the same kind of document with CRLF line ends and accents.
export const METEO = '---\nname: Météo\ndescription: x\nmultiround: false\n---\nè\n';
export const METEO_HEX = 'f827eb4b0c00d23021ebb9aed5a89ae3aeb4f92b';
export const METEO_BASE64 = '+CfrSwwA0jAh67mu1aia4660+Ss=';
export const CRLF_DOCUMENT =
  '---\r\nname: Météo CRLF\r\ndescription: é\r\nmultiround: false\r\n---\r\nLe récepteur répond.\r\n';

export type Call = { method: string; id?: string; request?: QueryRequest | FollowUpRequest; context?: RequestContext };

// A receiver you steer from the request: `{"body": {"fail": CODE}}` throws that AgoraError, `{"crash": …}` a plain Error.
export function fakeReceiver() {
  const calls: Call[] = [];
  const documents = new Map<string, string>([
    [METEO_HEX, METEO],
    [hashText(CRLF_DOCUMENT), CRLF_DOCUMENT],
  ]);
  const steer = (body: unknown) => {
    if (typeof body !== 'object' || body === null) return;
    if ('fail' in body) throw new AgoraError(body.fail as AgoraErrorCode);
    if ('crash' in body) throw new Error('secret database password in /srv/db');
    if ('corrupt' in body)
      throw new AgoraError('INTERNAL', 'Corrupt conversation record in Redis: agora:conversation:abc');
  };
  const receiver: ReceiverApi = {
    async query(request, context) {
      calls.push({ method: 'query', request, context });
      steer(request.body);
      const reply: SuccessResponse = { status: 'success', body: request.body };
      return request.multiround
        ? { ...reply, conversationId: 'conversation_1', conversationExpires: 1_900_000_000 }
        : reply;
    },
    async followUp(id, request, context) {
      calls.push({ method: 'followUp', id, request, context });
      if (id === 'unknown') throw new AgoraError('CONVERSATION_NOT_FOUND');
      steer(request.body);
      return { status: 'success', body: request.body, conversationId: id, conversationExpires: 1_900_000_300 };
    },
    async end(id) {
      calls.push({ method: 'end', id });
      if (id === 'unknown') throw new AgoraError('CONVERSATION_NOT_FOUND');
    },
    async wellknown(context) {
      calls.push({ method: 'wellknown', context });
      return { [METEO_HEX]: [`${context?.baseUrl}/protocols/${METEO_HEX}`] };
    },
    async document(hash) {
      return documents.get(hash);
    },
    async metrics() {
      return '# TYPE agora_queries_total counter\nagora_queries_total 3\n';
    },
    capabilities: {},
  };
  return { receiver, calls };
}

export function memoryLogger() {
  const lines: string[] = [];
  return {
    lines,
    error: (message: string) => void lines.push(`error ${message}`),
    warn: (message: string) => void lines.push(`warn ${message}`),
  };
}

export async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string; json: unknown }> {
  const init: RequestInit = { method, headers: { 'content-type': 'application/json', ...headers } };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const response = await fetch(base + path, init);
  const text = await response.text();
  const json = response.headers.get('content-type')?.startsWith('application/json')
    ? (JSON.parse(text) as unknown)
    : undefined;
  return { status: response.status, headers: response.headers, text, json };
}

export const failureOf = (error: string) => ({ status: 'failure', error });
