// A card-less ROAR agent as ROAR's README builds one: roar_sdk 0.3.2's `create_roar_router(server)` (roar_sdk/router.py)
// mounted on FastAPI, in front of a `ROARServer` (roar_sdk/server.py) with one `delegate` handler. What it does, each
// taken from those files (checked by hand against the real SDK, not in CI):
// - `GET /roar/health` answers `{"status":"ok","protocol":"roar/1.0"}`; there is no `/roar/card` and nothing else: any
//   other path is FastAPI's 404 `{"detail":"Not Found"}`.
// - `POST /roar/message` validates the body as a ROARMessage: `from` and `to` are AgentIdentity objects whose fields
//   all have defaults, and an empty `did` is replaced by a made-up `did:roar:<type>:<slug>-<16 hex>` (types.py,
//   `AgentIdentity.model_post_init`). A body that does not validate is 400 `{"error":"invalid_message",…}`.
// - With a `signing_secret`, `ROARMessage.verify(secret)` must pass: `auth.signature` is `hmac-sha256:…` over the seven
//   signed fields (with `to.did` as validated, so an empty one never verifies) and `auth.timestamp` within 300 s of
//   now; else 403 `{"error":"signature_invalid",…}`. Without a secret nothing is checked (unsigned messages pass).
// - A message id seen before is 409 `{"error":"duplicate_message",…}`. `to` is never compared with the agent's DID.
// - The reply is whatever the handler returns, dumped by alias: `{roar, id, from, to, intent, payload, context, auth,
//   timestamp}`, with `to` the sender's identity. The router does not sign it: the handler signs it or not
//   (`ROARMessage.sign`). An intent with no handler is answered `payload: {"error":"unhandled_intent",…}`.
// - `/roar/ws` answers each text frame with one frame: the reply message, or a bare `{"error":"signature_invalid"}`
//   (or `duplicate_message`, `processing_error`) with no `type`.
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
import type { JsonObject } from '../../src/schemas.js';

/** One message the agent took: what it was addressed to, and whether it carried a signature. */
export type RouterMessage = {
  id: string;
  to: string;
  intent: string;
  payload: JsonObject;
  context: JsonObject;
  signed: boolean;
};

/** Options of {@link startRoarRouter}: the handler's answer (a payload) and what the agent was built with. */
export type RoarRouterOptions = {
  name: string;
  /** `ROARServer(signing_secret=…)`. */
  secret?: string;
  /** Whether the handler signs its reply with the secret (README's security model does; its examples do not). */
  signReplies?: boolean;
  /** The reply's payload for a `delegate` message's payload. */
  answer: (payload: JsonObject) => JsonObject;
};

export type RoarRouter = {
  url: string;
  did: string;
  received: RouterMessage[];
  requests: string[];
  close(): Promise<void>;
};

type Fields = { [key: string]: LosslessValue };

function isFields(value: LosslessValue | undefined): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof RawNumber);
}

/** Starts the agent on a free loopback port. */
export async function startRoarRouter(options: RoarRouterOptions): Promise<RoarRouter> {
  const did = `did:roar:agent:${options.name}-${randomBytes(8).toString('hex')}`;
  const identity = {
    did,
    display_name: options.name,
    agent_type: 'agent',
    capabilities: [],
    version: '1.0',
    public_key: null,
  };
  const seen = new Set<string>();
  const received: RouterMessage[] = [];
  const requests: string[] = [];

  /** One message in: the reply message, or the router's refusal (status and error code). */
  function handle(text: string): { status: number; body: LosslessValue } {
    const refuse = (status: number, error: string) => ({ status, body: { error, detail: error } });
    let message: LosslessValue;
    try {
      message = parseLossless(text);
    } catch {
      return refuse(400, 'invalid_message');
    }
    if (!isFields(message) || !isFields(message.from) || !isFields(message.to) || typeof message.intent !== 'string')
      return refuse(400, 'invalid_message');
    const id = typeof message.id === 'string' ? message.id : `msg_${randomBytes(5).toString('hex')}`;
    const from =
      typeof message.from.did === 'string' && message.from.did !== ''
        ? message.from.did
        : `did:roar:agent:agent-${randomBytes(8).toString('hex')}`;
    const to =
      typeof message.to.did === 'string' && message.to.did !== ''
        ? message.to.did
        : `did:roar:agent:agent-${randomBytes(8).toString('hex')}`;
    const payload = isFields(message.payload) ? message.payload : {};
    const context = isFields(message.context) ? message.context : {};
    const auth = isFields(message.auth) ? message.auth : {};
    if (options.secret) {
      const timestamp = auth.timestamp ?? message.timestamp ?? null;
      const seconds = timestamp instanceof RawNumber ? timestamp.value : typeof timestamp === 'number' ? timestamp : 0;
      const body = signingBody({ id, from, to, intent: message.intent, payload, context, timestamp });
      const fresh = Math.abs(Date.now() / 1000 - seconds) <= 300;
      if (typeof auth.signature !== 'string' || !fresh || !verifyHmac(body, auth.signature, options.secret))
        return refuse(403, 'signature_invalid');
    }
    if (seen.has(id)) return refuse(409, 'duplicate_message');
    seen.add(id);
    received.push({
      id,
      to,
      intent: message.intent,
      payload: toPlain(payload) as JsonObject,
      context: toPlain(context) as JsonObject,
      signed: typeof auth.signature === 'string',
    });
    const replyPayload =
      message.intent === 'delegate'
        ? options.answer(toPlain(payload) as JsonObject)
        : { error: 'unhandled_intent', message: `No handler registered for intent '${message.intent}'` };
    const reply = {
      id: `msg_${randomBytes(5).toString('hex')}`,
      payload: replyPayload,
      context: { in_reply_to: id },
      timestamp: new RawNumber(pythonFloat(Date.now() / 1000)),
    };
    let replyAuth: Fields = {};
    if (options.secret && options.signReplies) {
      const body = signingBody({
        id: reply.id,
        from: did,
        to: from,
        intent: 'respond',
        payload: reply.payload,
        context: reply.context,
        timestamp: reply.timestamp,
      });
      replyAuth = { timestamp: reply.timestamp, signature: hmacSignature(body, options.secret) };
    }
    return {
      status: 200,
      body: {
        roar: '1.0',
        id: reply.id,
        from: identity,
        to: { ...message.from, did: from },
        intent: 'respond',
        payload: reply.payload,
        context: reply.context,
        auth: replyAuth,
        timestamp: reply.timestamp,
      },
    };
  }

  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    requests.push(`${request.method} ${path}`);
    const send = (status: number, body: LosslessValue) =>
      void response.writeHead(status, { 'content-type': 'application/json' }).end(canonicalJson(body));
    if (request.method === 'GET' && path === '/roar/health') return send(200, { status: 'ok', protocol: 'roar/1.0' });
    if (request.method === 'POST' && path === '/roar/message') {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const { status, body } = handle(Buffer.concat(chunks).toString('utf8'));
        send(status, body);
      });
      return;
    }
    send(404, { detail: 'Not Found' });
  });
  const sockets = new WebSocketServer({ server, path: '/roar/ws' });
  sockets.on('connection', (socket) => {
    socket.on('message', (data) => {
      const { status, body } = handle(data.toString('utf8'));
      socket.send(canonicalJson(status === 200 ? body : { error: (body as { error: string }).error }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    did,
    received,
    requests,
    close: async () => {
      for (const client of sockets.clients) client.terminate();
      sockets.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
