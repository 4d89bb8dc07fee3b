// OAP (Open Agent Protocol 0.3) on both sides: its face (`GET /`, `POST /invoke`), its client (`OapClient`, whole
// TaskEnvelopes), and how its agents are recognised.
import type { JsonObject, JsonValue } from '../../schemas.js';
import type { Binding, PeerClient, PeerOptions } from '../binding.js';
import { OapClient } from './client.js';
import { oapEnvelope, oapStep } from './envelope.js';
import { oapFace, type OapOptions } from './face.js';
import { OAP_PROBES } from './probes.js';

/** A query's body as text, for OAP's goal (natural language). */
function textOf(body: JsonValue): string {
  return typeof body === 'string' ? body : JSON.stringify(body);
}

/** An OAP peer client: each turn stands alone (OAP has no conversations), answered whole. */
function oapPeer(options: PeerOptions): PeerClient {
  const client = new OapClient(options);
  return {
    async ask(url, query, signal) {
      const memory: JsonObject = query.protocol
        ? { agora: { protocolHash: query.protocol.hash, body: query.body } }
        : {};
      const reply = await client.invoke(url, oapEnvelope({ goal: textOf(query.body), memory }), signal);
      return { body: reply.result };
    },
    async hop(url, step) {
      // OAP's rules: a full TaskEnvelope (the chain's id, the previous result as memory, a Step per finished hop), and
      // the reply's `result` winning over `memory.last_result`; the chain stops when the reply sets no handoff. Every
      // finished hop before this one handed the chain on: a hop that named no next agent would have ended it.
      const steps = step.done.map((done) =>
        oapStep(done.agentName, 'handed off', done.result ?? null, done.finishedAt),
      );
      const envelope = oapEnvelope({ id: step.runId, goal: step.goal, input: step.input ?? null, stepsTaken: steps });
      const reply = await client.invoke(url, envelope);
      const handoff = reply.handoff;
      return {
        result: reply.result,
        ...(handoff
          ? { handoff: { target: handoff.next_agent, ...(handoff.goal ? { goal: handoff.goal } : {}) } }
          : {}),
      };
    },
  };
}

/** OAP, both directions. */
export const oap = {
  name: 'oap',
  face: oapFace,
  probes: OAP_PROBES,
  peer: oapPeer,
} satisfies Binding<'oap', OapOptions>;
