// Rooms over HTTP on the hub: create, read, control, a person's message, and the live events over SSE
// (`Last-Event-ID` resumes with no repeat). Every route needs the hub's token when tokens are set.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { isAgoraError } from '../../errors.js';
import { TokenCheck } from '../../http/_limits.js';
import { readBody, requestTarget } from '../../http/_node-request.js';
import { roomRequestSchema } from './records.js';
import type { Rooms } from './rooms.js';

/** Options of the rooms routes. */
export type RoomRoutesOptions = { tokens?: string[]; maxBodyBytes?: number; heartbeatMs?: number };

const JSON_TYPE = 'application/json; charset=utf-8';
const controlSchema = z.object({ action: z.enum(['pause', 'resume', 'cancel']) }).strict();
const messageSchema = z.object({ text: z.string(), from: z.string().trim().min(1).max(100).optional() }).strict();

function send(response: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(value);
  response.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': String(Buffer.byteLength(body)), ...headers }).end(body);
}

const fail = (response: ServerResponse, status: number, error: string, headers?: Record<string, string>) => send(response, status, { status: 'failure', error }, headers);

async function parsed<T>(incoming: IncomingMessage, maxBytes: number, schema: z.ZodType<T>): Promise<T> {
  const raw = await readBody(incoming, maxBytes);
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    throw Object.assign(new Error('Request body must be JSON'), { status: 400 });
  }
  const result = schema.safeParse(value);
  if (!result.success) throw Object.assign(new Error(`Bad request: ${z.prettifyError(result.error)}`), { status: 400 });
  return result.data;
}

/** The rooms routes; resolves false for a path that is not under `/rooms`. */
export function createRoomRoutes(rooms: Rooms, options: RoomRoutesOptions = {}): (incoming: IncomingMessage, response: ServerResponse) => Promise<boolean> {
  const tokens = new TokenCheck(options.tokens ?? []);
  const maxBodyBytes = Math.min(options.maxBodyBytes ?? 64 * 1024, 1024 * 1024);
  const heartbeatMs = options.heartbeatMs ?? 15_000;

  async function events(incoming: IncomingMessage, response: ServerResponse, id: string): Promise<void> {
    const header = incoming.headers['last-event-id'];
    const last = header === undefined || header === '' ? 0 : /^\d{1,15}$/.test(String(header)) ? Number(header) : undefined;
    if (last === undefined) return fail(response, 400, 'Last-Event-ID must be an event id');
    if (!(await rooms.get(id))) return fail(response, 404, 'Room not found');
    response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' });
    response.flushHeaders();
    const controller = new AbortController();
    response.once('close', () => controller.abort());
    const heartbeat = setInterval(() => response.write(': ping\n\n'), heartbeatMs);
    heartbeat.unref();
    try {
      for await (const event of rooms.watch(id, last, controller.signal)) {
        // A watcher that does not read is dropped; it resumes from its last event id.
        if (!response.write(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`) && response.writableLength > 1024 * 1024) {
          response.destroy();
          return;
        }
      }
      response.end();
    } finally {
      clearInterval(heartbeat);
      controller.abort();
    }
  }

  return async function handle(incoming, response) {
    const segments = requestTarget(incoming.url)?.pathname.split('/').filter(Boolean) ?? [];
    if (segments[0] !== 'rooms') return false;
    const method = incoming.method ?? 'GET';
    const auth = incoming.headers.authorization;
    if (tokens.enabled && !tokens.accepts(Array.isArray(auth) ? auth[0] : auth)) {
      fail(response, 401, 'Unauthorized', { 'www-authenticate': 'Bearer' });
      return true;
    }
    const [, id, action, extra] = segments;
    try {
      if (extra !== undefined) fail(response, 404, 'Not found');
      else if (id === undefined) {
        if (method !== 'POST') fail(response, 405, 'Method not allowed', { allow: 'POST' });
        else send(response, 201, await rooms.create(await parsed(incoming, maxBodyBytes, roomRequestSchema)));
      } else if (action === undefined) {
        const room = method === 'GET' ? await rooms.get(id) : undefined;
        if (method !== 'GET') fail(response, 405, 'Method not allowed', { allow: 'GET' });
        else if (!room) fail(response, 404, 'Room not found');
        else send(response, 200, room);
      } else if (action === 'control' && method === 'POST') send(response, 200, await rooms.control(id, (await parsed(incoming, maxBodyBytes, controlSchema)).action));
      else if (action === 'messages' && method === 'POST') {
        const { text, from } = await parsed(incoming, maxBodyBytes, messageSchema);
        send(response, 201, await rooms.say(id, text, from));
      } else if (action === 'events' && method === 'GET') await events(incoming, response, id);
      else fail(response, 404, 'Not found');
    } catch (error) {
      if (response.headersSent) response.destroy();
      else if (isAgoraError(error)) fail(response, error.httpStatus, error.message);
      else if (typeof (error as { status?: unknown }).status === 'number') fail(response, (error as { status: number }).status, (error as Error).message);
      else throw error;
    }
    return true;
  };
}
