// The faces on node:http: a request as a FaceRequest, a FaceResponse written out (streams chunk by chunk).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AgoraError } from '../errors.js';
import type { FaceRequest, FaceResponse } from './_http.js';

/** Reads a node request body, refusing past `maxBytes` (declared or streamed) with `REQUEST_TOO_LARGE`. */
export function readNodeBody(incoming: IncomingMessage, maxBytes: number): Promise<Buffer> {
  if (Number(incoming.headers['content-length'] ?? 0) > maxBytes) return Promise.reject(new AgoraError('REQUEST_TOO_LARGE'));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    incoming.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        incoming.removeAllListeners('data');
        incoming.resume();
        reject(new AgoraError('REQUEST_TOO_LARGE'));
      } else chunks.push(chunk);
    });
    incoming.on('end', () => resolve(Buffer.concat(chunks, size)));
    incoming.on('error', reject);
  });
}

/** A node request as the faces see it; the body is read only when a face asks for it. */
export function faceRequestOf(incoming: IncomingMessage, maxBytes: number): FaceRequest {
  return {
    method: incoming.method ?? 'GET',
    path: incoming.url ?? '/',
    headers: incoming.headers,
    body: undefined,
    loadBody: () => readNodeBody(incoming, maxBytes),
    ...(incoming.socket.remoteAddress !== undefined ? { remoteAddress: incoming.socket.remoteAddress } : {}),
  };
}

const MAX_UNREAD_BYTES = 1024 * 1024;

/**
 * Writes a face's answer; a streamed body is written as it comes and stops when the client goes away. A whole
 * body is written at once, without a promise (the common case stays off the microtask queue).
 */
export function writeFaceResponse(response: ServerResponse, result: FaceResponse): Promise<void> | undefined {
  if (typeof result.body === 'string') {
    response.writeHead(result.status, result.headers).end(result.body);
    return undefined;
  }
  return writeStream(response, result.status, result.headers, result.body);
}

async function writeStream(response: ServerResponse, status: number, headers: Record<string, string>, body: AsyncIterable<string>): Promise<void> {
  response.writeHead(status, headers);
  response.flushHeaders();
  for await (const chunk of body) {
    if (response.destroyed) break;
    // A reader that does not read is dropped rather than buffered for without bound.
    if (!response.write(chunk) && response.writableLength > MAX_UNREAD_BYTES) {
      response.destroy();
      return;
    }
  }
  response.end();
}
