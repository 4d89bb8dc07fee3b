// Internal: what node:http would answer without a JSON body (or not at all), answered as the spec wants: a malformed
// or timed-out request, CONNECT, and an `Expect` header we do not meet.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { failure, JSON_TYPE } from './response.js';

function rawFailure(status: number, reason: string, message: string): string {
  const body = JSON.stringify({ status: 'failure', error: message });
  return (
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: ${JSON_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `Connection: close\r\n\r\n${body}`
  );
}

const BAD_REQUEST_RAW = rawFailure(400, 'Bad Request', 'Bad request');
const TIMEOUT_RAW = rawFailure(408, 'Request Timeout', 'Request timeout');
const HEADERS_TOO_LARGE_RAW = rawFailure(431, 'Request Header Fields Too Large', 'Request header fields too large');
const CONNECT_RAW = rawFailure(405, 'Method Not Allowed', 'Method not allowed');

// Node would answer these without a body, or drop the socket; the spec wants JSON for every error.
export function onClientError(error: Error & { code?: string }, socket: Duplex): void {
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code !== 'ECONNRESET' && socket.writable && !inFlight?.headersSent) {
    socket.write(
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? TIMEOUT_RAW
        : error.code === 'HPE_HEADER_OVERFLOW'
          ? HEADERS_TOO_LARGE_RAW
          : BAD_REQUEST_RAW,
    );
  }
  socket.destroy();
}

export function onConnect(_request: IncomingMessage, socket: Duplex): void {
  if (socket.writable) socket.write(CONNECT_RAW);
  socket.destroy();
}

export function onCheckExpectation(_request: IncomingMessage, response: ServerResponse): void {
  const result = failure(417, 'Expectation failed');
  response.shouldKeepAlive = false;
  response.writeHead(result.status, result.headers).end(result.body);
}
