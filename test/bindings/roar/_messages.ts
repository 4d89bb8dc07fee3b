// ROAR messages built and signed as ROAR's Python SDK builds them, and replies verified as it verifies them.
import type { KeyObject } from 'node:crypto';
import {
  canonicalJson,
  parseLossless,
  pythonFloat,
  RawNumber,
  type LosslessValue,
} from '../../../src/bindings/roar/canonical.js';
import { ed25519Signature, hmacSignature, signingBody } from '../../../src/bindings/roar/signing.js';

/** The sender every test message comes from. */
export const SENDER = 'did:roar:agent:sender-0123456789abcdef';

/** What a test message may set; `now` is the clock (ms) its timestamps come from. */
export type MessageOptions = {
  now: number;
  id?: string;
  secret?: string;
  key?: KeyObject;
  timestamp?: number;
  context?: LosslessValue;
  from?: string;
};

/** A message as ROAR's Python SDK sends it: canonical JSON of the seven fields signed, auth.timestamp a float. */
export function pythonMessage(to: string, payload: LosslessValue, options: MessageOptions): string {
  const timestamp = new RawNumber(pythonFloat((options.timestamp ?? options.now) / 1000));
  const id = options.id ?? `msg_${Math.random().toString(16).slice(2, 12)}`;
  const from = options.from ?? SENDER;
  const context = options.context ?? {};
  const body = signingBody({ id, from, to, intent: 'delegate', payload, context, timestamp });
  const auth: Record<string, LosslessValue> = options.secret
    ? { signature: hmacSignature(body, options.secret), timestamp }
    : options.key
      ? { signature: ed25519Signature(body, options.key), timestamp }
      : {};
  return canonicalJson({
    roar: '1.0',
    id,
    from: {
      did: from,
      display_name: 'sender',
      agent_type: 'agent',
      capabilities: [],
      version: '1.0',
      public_key: null,
    },
    to: { did: to, display_name: 'x', agent_type: 'agent', capabilities: [], version: '1.0', public_key: null },
    intent: 'delegate',
    payload,
    context,
    auth,
    timestamp,
  });
}

/** Verifies a reply the way a Python ROAR client would: its canonical body from the bytes it read. */
export function replyVerifies(text: string, check: (body: string, signature: string) => boolean): boolean {
  const reply = parseLossless(text) as Record<string, LosslessValue> & {
    from: { did: string };
    to: { did: string };
    auth: { signature: string; timestamp: LosslessValue };
  };
  const body = signingBody({
    id: reply.id!,
    from: reply.from.did,
    to: reply.to.did,
    intent: reply.intent!,
    payload: reply.payload!,
    context: reply.context!,
    timestamp: reply.auth.timestamp,
  });
  return check(body, reply.auth.signature);
}

/**
 * One message sent as ROAR's Python SDK sends it (roar_sdk 0.3.2, read in its sources): `ROARClient.send_remote`
 * takes the WebSocket whenever the card's `endpoints` names `websocket` (client.py, `_best_transport`), and `ws_send`
 * (transports/websocket.py) opens `{endpoints.websocket}/roar/ws`, sends the message, reads exactly one frame and
 * returns `ROARMessage.model_validate` of it, raising on anything else. Its own router (router.py) answers each message
 * with that one frame, the reply's `model_dump`. Returns the transport it took and the frame it read.
 */
export async function sdkSendRemote(
  baseUrl: string,
  message: string,
): Promise<{ transport: 'websocket' | 'http'; frame: string }> {
  const card = (await (await fetch(`${baseUrl}/roar/card`)).json()) as { endpoints: Record<string, string> };
  const websocket = card.endpoints.websocket;
  if (websocket === undefined)
    return {
      transport: 'http',
      frame: await (await fetch(`${card.endpoints.http}/roar/message`, { method: 'POST', body: message })).text(),
    };
  const { WebSocket } = await import('ws');
  const socket = new WebSocket(`${websocket.replace(/\/$/, '')}/roar/ws`);
  try {
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    const frame = new Promise<string>((resolve, reject) => {
      socket.once('message', (data) => resolve(String(data)));
      socket.once('close', () => reject(new Error('closed before a frame')));
    });
    socket.send(message);
    return { transport: 'websocket', frame: await frame };
  } finally {
    socket.close();
  }
}
