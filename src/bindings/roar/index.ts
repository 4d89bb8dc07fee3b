// ROAR (ROAR 1.0, spec 0.3) on both sides: its face (`/roar/…`, signed messages, WebSockets, events), its client
// (`RoarClient`), how its agents are recognised, its card, and its crypto (canonical JSON, identities, signatures).
import type { QueryResult } from '../../sender/transport.js';
import { senderEvents, type Binding, type PeerClient, type PeerOptions, type PeerQuery } from '../binding.js';
import { chainReply, chainText, handoffOf } from '../chain.js';
import { RoarClient, type RoarAnswer } from './client.js';
import { roarFace, type RoarOptions } from './face.js';
import { ROAR_PROBES } from './probes.js';

/** What a query asks of a ROAR agent: its body, under a protocol by hash, in a session. */
function askOf(query: PeerQuery) {
  return {
    body: query.body,
    ...(query.protocol ? { protocolHash: query.protocol.hash } : {}),
    ...(query.conversationId ? { sessionId: query.conversationId } : {}),
  };
}

/** A ROAR answer as a QueryResult: its session is the conversation to continue. */
function resultOf({ result, sessionId }: RoarAnswer): QueryResult {
  return { body: result, ...(sessionId ? { conversationId: sessionId } : {}) };
}

/** A ROAR peer client: one identity for the caller's messages, its sessions as conversations. */
function roarPeer(options: PeerOptions): PeerClient {
  const client = new RoarClient(options);
  return {
    async ask(url, query, signal) {
      return resultOf(await client.ask(url, askOf(query), signal));
    },
    stream: (url, query, signal) => senderEvents(client.stream(url, askOf(query), signal), resultOf),
    async hop(url, step) {
      // ROAR's answer is the `respond` message's `payload.result`; a handoff is named in it, or beside it.
      const answer = await client.ask(url, { body: chainText(step) });
      return chainReply(answer.result, handoffOf(answer.result) ?? handoffOf(answer.reply.payload));
    },
  };
}

/** ROAR, both directions. */
export const roar = {
  name: 'roar',
  face: roarFace,
  probes: ROAR_PROBES,
  peer: roarPeer,
} satisfies Binding<'roar', RoarOptions>;
