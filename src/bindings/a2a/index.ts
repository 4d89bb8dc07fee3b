// A2A (1.0 and 0.3) on both sides: its face (the card and the JSON-RPC endpoint), its client (`A2aClient`, over
// @a2a-js/sdk), and how its agents are recognised.
import { AgoraError } from '../../errors.js';
import type { JsonValue } from '../../schemas.js';
import { agentBaseUrl, type QueryResult } from '../../sender/transport.js';
import { senderEvents, type Binding, type PeerClient, type PeerOptions, type PeerQuery } from '../binding.js';
import { chainReply, chainText } from '../chain.js';
import { A2aClient, type A2aAnswer } from './client.js';
import { a2aFace, type A2aOptions } from './face.js';
import { A2A_PROBES } from './probes.js';

/** What a query sends: under a protocol, a data part `{protocolHash, body}`; else the body, in its context. */
function messageOf(query: PeerQuery) {
  const body: JsonValue = query.protocol ? { protocolHash: query.protocol.hash, body: query.body } : query.body;
  return { body, ...(query.conversationId ? { contextId: query.conversationId } : {}) };
}

/** A completed task's answer; any other end state is the peer's failure. */
function completed(answer: A2aAnswer, url: string, detail = ''): A2aAnswer {
  if (answer.state !== 'completed')
    throw new AgoraError('PEER_FAILURE', `A2A task ${answer.taskId ?? ''} at ${url}: ${answer.state}${detail}`);
  return answer;
}

/** An A2A answer as a QueryResult: its context is the conversation to continue. */
function resultOf({ result, contextId }: A2aAnswer): QueryResult {
  return { body: result, ...(contextId ? { conversationId: contextId } : {}) };
}

/** An A2A peer client: its contexts as conversations. */
function a2aPeer(options: PeerOptions): PeerClient {
  const client = new A2aClient(options);
  return {
    async ask(url, query, signal) {
      return resultOf(completed(await client.send(url, messageOf(query), signal), agentBaseUrl(url)));
    },
    stream: (url, query, signal) => senderEvents(client.stream(url, messageOf(query), signal), resultOf),
    async hop(url, step) {
      // A2A's answer is the completed task's artifacts (or the agent's message); any other end state failed the hop.
      const answer = completed(await client.send(url, { body: chainText(step) }), url, ', not completed');
      return chainReply(answer.result);
    },
  };
}

/** A2A, both directions. */
export const a2a = {
  name: 'a2a',
  face: a2aFace,
  probes: A2A_PROBES,
  peer: a2aPeer,
} satisfies Binding<'a2a', A2aOptions>;
