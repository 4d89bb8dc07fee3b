// Rooms over HTTP on the hub, as a mount: create, read, control, a person's message, the live events in ARP's frames
// over SSE (`Last-Event-ID` resumes with no repeat) and over WebSocket. Every route needs the hub's token when tokens
// are set; the guard, the SSE writer (a replay waits for the reader to drain) and the socket caps are the edge's.
import { z } from 'zod';
import { AgoraError, isAgoraError } from '../../errors.js';
import { readJson } from '../../edge/body.js';
import { parseLastEventId, sseFrame } from '../../edge/events.js';
import { callerKey } from '../../edge/guard.js';
import type { Mount, MountedRequest, MountRoute } from '../../edge/mount.js';
import { cleanPath, requestTarget } from '../../edge/request.js';
import { eventStream, failure, json, type EdgeResponse, type EventStream } from '../../edge/response.js';
import { arpFrame, roomRequestSchema, type RoomEvent } from './records.js';
import type { Rooms } from './rooms.js';
import { serveRoomSocket } from './ws.js';

/** Options of {@link roomsMount}: the bounds on watchers and requests. */
export type RoomsMountOptions = {
  /** Largest request body, in bytes (default 64 KiB). */
  maxBodyBytes?: number;
  /** Open SSE watchers in all (default 1,024); more are refused with 503. */
  maxWatchers?: number;
  /** Open SSE watchers of one room (default 256, as its sockets); more are refused with 503. */
  maxWatchersPerRoom?: number;
  /** Open SSE watchers per client address or IPv6 /64 (default 64, as its sockets); more are refused with 503. */
  maxWatchersPerClient?: number;
  /**
   * The interval announced in a watcher's `hello` (socket or SSE) and kept by the hub's heartbeats, ms (default 30
   * 000).
   */
  socketHeartbeatMs?: number;
};

/** Default cap on SSE watchers in all. */
export const DEFAULT_MAX_WATCHERS = 1024;
/** Default cap on SSE watchers of one room. */
export const DEFAULT_MAX_WATCHERS_PER_ROOM = 256;
/** Default cap on SSE watchers of one client. */
export const DEFAULT_MAX_WATCHERS_PER_CLIENT = 64;

/** The rooms' routes: all under `/rooms`, all behind the token, sockets at `/rooms/:id/ws`. */
export const ROOM_ROUTES: readonly MountRoute[] = [
  { path: '/rooms', prefix: true, socket: true, allow: 'GET, POST, OPTIONS' },
];

const controlSchema = z.object({ action: z.enum(['pause', 'resume', 'cancel']) }).strict();
const messageSchema = z.object({ text: z.string(), from: z.string().trim().min(1).max(100).optional() }).strict();
const SOCKET_PATH = /^\/rooms\/([A-Za-z0-9_-]{1,64})\/ws$/;

function notAllowed(allow: string): EdgeResponse {
  const response = failure(405, 'Method not allowed');
  response.headers.allow = allow;
  return response;
}

/** Counts of open watchers by key, each with its cap. */
class WatcherCounts {
  readonly #counts = new Map<string, number>();

  count(key: string): number {
    return this.#counts.get(key) ?? 0;
  }

  change(key: string, by: number): void {
    const next = this.count(key) + by;
    if (next <= 0) this.#counts.delete(key);
    else this.#counts.set(key, next);
  }
}

/**
 * The rooms of a hub as a mount (`startHub` composes it beside the hub's API).
 * @example const edge = compose([hubMount(hub), roomsMount(rooms)], { tokens: ['secret'] });
 */
export function roomsMount(rooms: Rooms, options: RoomsMountOptions = {}): Mount {
  const maxWatchers = options.maxWatchers ?? DEFAULT_MAX_WATCHERS;
  const maxPerRoom = options.maxWatchersPerRoom ?? DEFAULT_MAX_WATCHERS_PER_ROOM;
  const maxPerClient = options.maxWatchersPerClient ?? DEFAULT_MAX_WATCHERS_PER_CLIENT;
  const heartbeatMs = options.socketHeartbeatMs ?? 30_000;
  const perRoom = new WatcherCounts();
  const perClient = new WatcherCounts();
  let watchers = 0;
  const open = new Set<EventStream>();

  /** A room's events as frames; the watcher's slot is given back once, however the stream ends. */
  function watch(id: string, last: number, client: string): EventStream {
    const controller = new AbortController();
    const events = rooms.watch(id, last, controller.signal);
    watchers += 1;
    perRoom.change(id, 1);
    perClient.change(client, 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      watchers -= 1;
      perRoom.change(id, -1);
      perClient.change(client, -1);
      open.delete(stream);
    };
    // ARP's frames, as the WebSocket sends them: `hello` with the heartbeat interval, each event, a `heartbeat`
    // whenever nothing came for that long. The event read outlives a heartbeat: it is taken up again next time.
    let hello = true;
    let pending: Promise<IteratorResult<RoomEvent>> | undefined;
    const stream: EventStream = {
      frames: {
        async next() {
          if (hello) {
            hello = false;
            return {
              done: false,
              value: sseFrame('hello', JSON.stringify({ type: 'hello', flowId: id, heartbeatInterval: heartbeatMs })),
            };
          }
          pending ??= events.next();
          let timer: NodeJS.Timeout | undefined;
          const beat = new Promise<'beat'>((resolve) => (timer = setTimeout(() => resolve('beat'), heartbeatMs)));
          const next = await Promise.race([pending, beat]).finally(() => clearTimeout(timer));
          if (next === 'beat') return { done: false, value: sseFrame('heartbeat', '{"type":"heartbeat"}') };
          pending = undefined;
          if (next.done) {
            release();
            return { done: true, value: undefined };
          }
          const frame = arpFrame(id, next.value);
          return { done: false, value: sseFrame(String(frame.type), JSON.stringify(frame), next.value.id) };
        },
      },
      cancel() {
        controller.abort();
        release();
      },
    };
    open.add(stream);
    return stream;
  }

  async function events(request: MountedRequest, id: string): Promise<EdgeResponse> {
    const last = parseLastEventId(request.headers['last-event-id']) ?? 0;
    const client = callerKey(request.remoteAddress, request.principal);
    // Each watcher holds a connection: bounded before the room is even read.
    if (watchers >= maxWatchers || perRoom.count(id) >= maxPerRoom || perClient.count(client) >= maxPerClient) {
      const refusal = failure(503, 'Too many watchers of rooms open');
      refusal.headers['retry-after'] = '5';
      return refusal;
    }
    if (!(await rooms.get(id))) return failure(404, 'Room not found');
    return eventStream(watch(id, last, client));
  }

  async function handle(request: MountedRequest): Promise<EdgeResponse> {
    const { method } = request;
    const [, , id, action, extra] = cleanPath(request.path).split('/');
    if (extra !== undefined || id === '' || action === '') return failure(404, 'Not found');
    if (id === undefined) {
      if (method !== 'POST') return notAllowed('POST');
      return json(201, await rooms.create(await readJson(request, roomRequestSchema)));
    }
    if (action === undefined) {
      if (method !== 'GET' && method !== 'HEAD') return notAllowed('GET');
      const room = await rooms.get(id);
      return room ? json(200, room) : failure(404, 'Room not found');
    }
    if (action === 'control' && method === 'POST')
      return json(200, await rooms.control(id, (await readJson(request, controlSchema)).action));
    if (action === 'messages' && method === 'POST') {
      const { text, from } = await readJson(request, messageSchema);
      return json(201, await rooms.say(id, text, from));
    }
    if (action === 'events' && method === 'GET') return events(request, id);
    return failure(404, 'Not found');
  }

  async function upgrade(request: MountedRequest): Promise<EdgeResponse> {
    const url = requestTarget(request.path);
    const match = url && SOCKET_PATH.exec(url.pathname);
    if (!url || !match) return failure(404, 'Not found');
    const last = parseLastEventId(request.headers['last-event-id'] ?? url.searchParams.get('lastEventId')) ?? 0;
    const roomId = match[1]!;
    let room;
    try {
      room = await rooms.get(roomId);
    } catch (error) {
      if (isAgoraError(error)) throw error;
      // The store unreachable (Redis down): refused, never left hanging.
      throw new AgoraError('STORE_UNAVAILABLE', 'Room store unavailable', { cause: error });
    }
    if (!room) return failure(404, 'Room not found');
    return {
      status: 101,
      headers: {},
      body: '',
      upgrade: { resource: roomId, accept: (session) => serveRoomSocket(session, rooms, roomId, last, heartbeatMs) },
    };
  }

  return {
    name: 'rooms',
    routes: ROOM_ROUTES,
    maxBodyBytes: Math.min(options.maxBodyBytes ?? 64 * 1024, 1024 * 1024),
    handle,
    upgrade,
    failure,
    close() {
      for (const stream of [...open]) stream.cancel();
    },
  };
}
