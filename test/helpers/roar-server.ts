// A small ROAR agent written from ROAR's spec (1.0 wire, spec 0.3), for tests of our clients and hub: `/roar/health`,
// `/roar/card`, `POST /roar/message` (HMAC-verified when it has a secret, replays refused, a signed `respond` back),
// `/roar/ws` (one reply frame per message, the SDK router's shape, `delta` frames before it when it streams) and
// `/roar/events` (task_update StreamEvents over SSE). Signing is checked against ROAR's golden fixtures elsewhere.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { WebSocketServer } from 'ws';
import {
  canonicalJson,
  parseLossless,
  pythonFloat,
  RawNumber,
  toPlain,
  type LosslessValue,
} from '../../src/bindings/roar/canonical.js';
import { hmacSignature, signingBody, verifyHmac } from '../../src/bindings/roar/signing.js';
import type { JsonValue } from '../../src/schemas.js';

/** What the agent answers to a task's text: a result (any JSON), its pieces when streamed over the WebSocket. */
export type RoarAnswerer = (
  task: string,
) => JsonValue | { pieces: string[] } | Promise<JsonValue | { pieces: string[] }>;

export type RoarTestServer = {
  url: string;
  did: string;
  received: { intent: string; payload: JsonValue; signed: boolean }[];
  listening(): Promise<void>;
  close(): Promise<void>;
};

type Options = {
  name: string;
  description: string;
  capabilities: string[];
  skills?: string[];
  secret?: string;
  answer: RoarAnswerer;
  tamper?: boolean;
};

/** Starts the agent on a free loopback port. */
export async function startRoarServer(options: Options): Promise<RoarTestServer> {
  const did = `did:roar:agent:${options.name}-${randomBytes(8).toString('hex')}`;
  const identity = {
    did,
    display_name: options.name,
    agent_type: 'agent',
    capabilities: options.capabilities,
    version: '1.0',
    public_key: null,
  };
  const seen = new Set<string>();
  const received: RoarTestServer['received'] = [];
  const listeners = new Set<ServerResponse>();
  let heard: () => void = () => undefined;
  const firstListener = new Promise<void>((resolve) => (heard = resolve));
  let url = '';

  const refuse = (status: number, error: string) => ({ status, text: JSON.stringify({ error, message: error }) });

  /** One message in, the reply out (a refusal as ROAR's error body). */
  async function handle(text: string, onDelta?: (delta: string) => void): Promise<{ status: number; text: string }> {
    let message: LosslessValue;
    try {
      message = parseLossless(text);
    } catch {
      return refuse(400, 'invalid_message');
    }
    const raw = message as Record<string, LosslessValue>;
    const from = (raw.from as Record<string, LosslessValue> | undefined)?.did;
    const to = (raw.to as Record<string, LosslessValue> | undefined)?.did;
    const auth = (raw.auth ?? {}) as Record<string, LosslessValue>;
    if (typeof raw.id !== 'string' || typeof from !== 'string' || typeof raw.intent !== 'string')
      return refuse(400, 'invalid_message');
    if (to !== did) return refuse(400, 'wrong_recipient');
    if (options.secret !== undefined) {
      const body = signingBody({
        id: raw.id,
        from,
        to,
        intent: raw.intent,
        payload: raw.payload ?? {},
        context: raw.context ?? {},
        timestamp: auth.timestamp ?? null,
      });
      if (typeof auth.signature !== 'string' || !verifyHmac(body, auth.signature, options.secret))
        return refuse(401, 'signature_invalid');
    }
    if (seen.has(raw.id)) return refuse(409, 'duplicate_message');
    seen.add(raw.id);
    const payload = toPlain(raw.payload ?? {}) as Record<string, JsonValue>;
    received.push({ intent: raw.intent, payload, signed: typeof auth.signature === 'string' });
    const context = (toPlain(raw.context ?? {}) ?? {}) as Record<string, JsonValue>;
    const session =
      typeof context.session_id === 'string' ? context.session_id : `sess_${randomBytes(4).toString('hex')}`;
    publish({
      type: 'task_update',
      source: did,
      session_id: session,
      data: { task_id: raw.id, status: 'working' },
      timestamp: Date.now() / 1000,
    });
    const answer = await options.answer(String(payload.task ?? payload.text ?? JSON.stringify(payload)));
    let result: JsonValue;
    if (
      typeof answer === 'object' &&
      answer !== null &&
      !Array.isArray(answer) &&
      Array.isArray((answer as { pieces?: unknown }).pieces)
    ) {
      const pieces = (answer as { pieces: string[] }).pieces;
      for (const piece of pieces) onDelta?.(piece);
      result = pieces.join('');
    } else result = answer as JsonValue;
    publish({
      type: 'task_update',
      source: did,
      session_id: session,
      data: { task_id: raw.id, status: 'completed' },
      timestamp: Date.now() / 1000,
    });
    const timestamp = new RawNumber(pythonFloat(Date.now() / 1000));
    const id = `msg_${randomBytes(5).toString('hex')}`;
    const replyContext = { in_reply_to: raw.id, session_id: session };
    const replyPayload = { status: 'ok', result };
    const signed = signingBody({
      id,
      from: did,
      to: from,
      intent: 'respond',
      payload: replyPayload,
      context: replyContext,
      timestamp,
    });
    const replyAuth: Record<string, LosslessValue> =
      options.secret === undefined ? {} : { signature: hmacSignature(signed, options.secret), timestamp };
    // A tampering agent changes the result after signing: a verifying client must refuse the reply.
    const sentPayload = options.tamper ? { status: 'ok', result: 'tampered' } : replyPayload;
    return {
      status: 200,
      text: canonicalJson({
        roar: '1.0',
        id,
        from: identity,
        to: raw.from ?? { did: from },
        intent: 'respond',
        payload: sentPayload,
        context: replyContext,
        auth: replyAuth,
        timestamp,
      }),
    };
  }

  function publish(event: Record<string, JsonValue>): void {
    for (const listener of listeners)
      listener.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
  }

  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const send = (status: number, text: string) =>
      void response.writeHead(status, { 'content-type': 'application/json' }).end(text);
    const path = (request.url ?? '/').split('?')[0];
    if (request.method === 'GET' && path === '/roar/health') return send(200, '{"status":"ok","protocol":"roar/1.0"}');
    if (request.method === 'GET' && path === '/roar/card') {
      return send(
        200,
        JSON.stringify({
          identity,
          description: options.description,
          skills: options.skills ?? [],
          channels: ['http', 'websocket'],
          endpoints: { http: url, websocket: url.replace(/^http/, 'ws') },
          declared_capabilities: [],
          metadata: {},
        }),
      );
    }
    if (request.method === 'GET' && path === '/roar/events') {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      response.write(': roar events\n\n');
      listeners.add(response);
      heard();
      request.on('close', () => listeners.delete(response));
      return;
    }
    if (request.method === 'POST' && path === '/roar/message') {
      let text = '';
      request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      request.on('end', () => void handle(text).then(({ status, text: reply }) => send(status, reply)));
      return;
    }
    send(404, '{"error":"not_found","message":"Not found"}');
  });
  const sockets = new WebSocketServer({ server, path: '/roar/ws' });
  sockets.on('connection', (socket) => {
    socket.on('message', (data) => {
      void handle(data.toString('utf8'), (delta) => socket.send(JSON.stringify({ type: 'delta', delta }))).then(
        ({ status, text }) => {
          // ROAR's router (roar_sdk router.py) sends the reply message itself as the one frame; a refusal is `{"error": code}` alone.
          socket.send(status === 200 ? text : JSON.stringify({ error: (JSON.parse(text) as { error: string }).error }));
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url,
    did,
    received,
    listening: () => firstListener,
    close: async () => {
      for (const listener of listeners) listener.end();
      for (const client of sockets.clients) client.terminate();
      sockets.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
