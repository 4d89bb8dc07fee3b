// ROAR over WebSocket (`/roar/ws`), accepted through the edge's socket router (which caps sockets and frame size,
// nesting, and counts every message against the rate limit): when tokens are set, an auth frame first (browsers cannot
// send headers on an upgrade) or the token in the upgrade's Authorization header, then each frame a bare ROAR message.
// Each message is answered with one frame, the signed reply ROARMessage, as ROAR's own router answers it: ROAR's SDK
// `ws_send` sends one message and reads exactly one frame as a ROARMessage. Deltas only when asked for (`?deltas=true`
// on the upgrade, or `context.deltas: true` in the message; `context.deltas: false` turns a socket's off for one
// message): `{"type":"delta","delta":…}` frames, then the reply with `"type": "done"` added. A refusal is
// `{"type":"error","error":code,"message":…}`, an error frame as ROAR's router sends one (no ROARMessage: `ws_send`
// raises on it, as `http_send` does on a 4xx). Auth time, messages in flight per socket and heartbeats are bounded
// here.
import type { WebSocket } from 'ws';
import { bearerToken } from '../../edge/guard.js';
import { header } from '../../edge/request.js';
import type { SocketSession } from '../../edge/response.js';
import { tokenScope } from '../../faces/sessions.js';
import { answerRoarMessage, type DeltaListeners, type RoarFaceDeps } from './answer.js';
import { RoarRefusal } from './message.js';

/** Limits of the ROAR WebSocket beyond the edge's (open sockets, frame size: the listen options). */
export type RoarSocketOptions = {
  /** Time to send the auth frame when tokens are set, ms (default 5000). */
  authTimeoutMs?: number;
  /** Interval between pings, ms (default 30 000); a socket that missed one pong is dropped. */
  heartbeatMs?: number;
  /** Messages answered at once per socket (default 4); more get an error event. */
  maxInFlight?: number;
};

function send(socket: WebSocket, text: string): void {
  if (socket.readyState === socket.OPEN) socket.send(text);
}

/** The open ROAR sockets: each one's session, and one heartbeat for all of them. */
export class RoarSockets {
  readonly #alive = new Map<WebSocket, boolean>();
  readonly #authTimeoutMs: number;
  readonly #heartbeatMs: number;
  readonly #maxInFlight: number;
  #heartbeat: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: RoarFaceDeps,
    options: RoarSocketOptions = {},
  ) {
    this.#authTimeoutMs = options.authTimeoutMs ?? 5000;
    this.#heartbeatMs = options.heartbeatMs ?? 30_000;
    this.#maxInFlight = options.maxInFlight ?? 4;
  }

  /** Serves one accepted socket; `baseUrl` is the card's base for `discover`. */
  accept(session: SocketSession, baseUrl: string): void {
    const socket = session.client;
    const socketDeltas = deltasAsked(session.request.path);
    this.#watch(socket);
    const { deps } = this;
    const maxInFlight = this.#maxInFlight;
    // No auth frame when the edge has no token to ask for, or when the upgrade carried one (a client that can set
    // headers).
    const authorization = header(session.request, 'authorization');
    const bearer = (bearerToken(authorization) ?? authorization)?.trim() || undefined;
    // A bearer on the upgrade is the edge's to check: a static token here, an access token by the guard (principal).
    const upgraded = bearer !== undefined && (session.acceptsToken(bearer) || session.request.principal !== undefined);
    let authenticated = upgraded || session.acceptsToken(undefined);
    // The token the socket authenticated with: its messages' sessions are scoped by it.
    let token: string | undefined = upgraded ? bearer : undefined;
    let inFlight = 0;
    const timer = authenticated
      ? undefined
      : setTimeout(() => socket.close(1008, 'authentication timeout'), this.#authTimeoutMs);
    timer?.unref();
    socket.on('close', () => clearTimeout(timer));

    session.onMessage((data, isBinary) => {
      const text = isBinary ? '' : data.toString('utf8');
      if (!authenticated) {
        let frame: unknown;
        try {
          frame = JSON.parse(text);
        } catch {
          frame = undefined;
        }
        const frameToken =
          (frame as { type?: unknown; token?: unknown } | undefined)?.type === 'auth'
            ? (frame as { token?: unknown }).token
            : undefined;
        if (typeof frameToken === 'string' && session.acceptsToken(frameToken)) {
          authenticated = true;
          token = frameToken;
          clearTimeout(timer);
          send(socket, '{"type":"auth_ok"}');
        } else {
          send(
            socket,
            JSON.stringify({ type: 'error', message: 'Unauthorized: send {"type":"auth","token":…} first' }),
          );
          socket.close(1008, 'unauthorized');
        }
        return;
      }
      if (inFlight >= maxInFlight) {
        send(
          socket,
          JSON.stringify({ type: 'error', message: `At most ${maxInFlight} messages at once on one socket` }),
        );
        return;
      }
      inFlight += 1;
      // Whether this message's answer streams: its own `context.deltas` when it is a boolean, else the socket's.
      let streamed = false;
      const listeners: DeltaListeners = (asked) => {
        if (!(typeof asked === 'boolean' ? asked : socketDeltas)) return undefined;
        streamed = true;
        return (delta) => send(socket, JSON.stringify({ type: 'delta', delta }));
      };
      answerRoarMessage(deps, text, () => baseUrl, undefined, listeners, session.request.principal ?? tokenScope(token))
        .then(
          // The reply's canonical text ends in `}` and has no `type` of its own: `type` goes last, as sorted keys put
          // it.
          (outcome) => send(socket, streamed ? `${outcome.text.slice(0, -1)}, "type": "done"}` : outcome.text),
          (error: unknown) => {
            if (error instanceof RoarRefusal)
              send(socket, JSON.stringify({ type: 'error', error: error.code, message: error.message }));
            else {
              deps.logger.error(`ROAR WebSocket: ${error instanceof Error ? error.message : String(error)}`);
              send(socket, JSON.stringify({ type: 'error', error: 'internal_error', message: 'Internal error' }));
            }
          },
        )
        .finally(() => (inFlight -= 1));
    });
  }

  /** Serves one `/roar/ws/stream` socket: the agent's task events (of `?session_id=` only, when given) until it closes. */
  acceptEvents(session: SocketSession): void {
    const socket = session.client;
    // Incoming frames mean nothing here; the edge still counts them against the rate limit.
    session.onMessage(() => {});
    if (this.deps.events.attach(socket, queryOf(session.request.path).get('session_id') || undefined))
      this.#watch(socket);
  }

  /** Stops the heartbeat (the edge's router closes the sockets themselves). */
  close(): void {
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
    this.#alive.clear();
  }

  // Pings every socket each interval; one that did not answer the last ping is dropped.
  #watch(socket: WebSocket): void {
    this.#alive.set(socket, true);
    socket.on('pong', () => this.#alive.has(socket) && this.#alive.set(socket, true));
    socket.once('close', () => {
      this.#alive.delete(socket);
      if (this.#alive.size === 0) this.close();
    });
    if (this.#heartbeat !== undefined) return;
    this.#heartbeat = setInterval(() => {
      for (const [client, alive] of this.#alive) {
        if (!alive) {
          client.terminate();
          continue;
        }
        this.#alive.set(client, false);
        client.ping();
      }
    }, this.#heartbeatMs);
    this.#heartbeat.unref();
  }
}

function queryOf(path: string): URLSearchParams {
  const at = path.indexOf('?');
  return new URLSearchParams(at < 0 ? '' : path.slice(at + 1));
}

/** Whether a socket's upgrade URL asks for delta frames (`?deltas=true`, `1`, `on` or `yes`); without it, none. */
function deltasAsked(path: string): boolean {
  const value = queryOf(path).get('deltas');
  return value !== null && ['true', '1', 'on', 'yes'].includes(value.toLowerCase());
}
