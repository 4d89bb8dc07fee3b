// Internal: the edge's record of one request, and the path of a request target as spans and logs name it.
import type { IncomingMessage } from 'node:http';
import type { LogFields } from '../log.js';
import { traceFields, TRACING } from '../telemetry/tracing.js';
import type { NodeRequest } from './body.js';

// One record per request: a line a person reads, and the same facts as fields for a machine (`--log-format json`).
export function logRequest(
  record: (message: string, fields?: LogFields) => void,
  incoming: IncomingMessage,
  request: NodeRequest,
  status: number,
  ms: number,
): void {
  const { protocol, protocolName, taken } = request.log ?? {};
  const trace = TRACING.on ? traceFields() : undefined;
  const how = taken ? ` ${taken}${protocolName ? ` "${protocolName}"` : ''}` : '';
  record(`request ${request.id}: ${incoming.method} ${incoming.url} ${status} ${ms.toFixed(1)}ms${how}`, {
    requestId: request.id,
    method: incoming.method,
    path: incoming.url,
    status,
    ms: Math.round(ms * 10) / 10,
    // Undefined fields are left out of both formats.
    protocol: protocol || undefined,
    protocolName: protocolName || undefined,
    taken: taken || undefined,
    // Who asked, as the guard found it (an access token's subject); never the token.
    principal: request.principal,
    // Joined to the request's trace (the active span is its server span) when tracing is on.
    trace_id: trace?.trace_id,
    span_id: trace?.span_id,
  });
}

/** A request target's path, without its query (which may carry what a stranger typed). */
export function pathOf(target: string): string {
  const query = target.indexOf('?');
  return query === -1 ? target : target.slice(0, query);
}
