// What a hub's chain says to a peer client, whatever the protocol: the hop to take (its goal, what the previous agent
// found, the finished hops) and the reply (a result, and the agent it hands the chain to). A handoff is named as OAP
// names it (`handoff.next_agent`), in any protocol's reply.
import { z } from 'zod';
import type { JsonValue } from '../schemas.js';

/** One hop of a chain, as a peer client carries it. */
export type ChainStep = {
  runId: string;
  goal: string;
  /** What the previous hop answered. */
  input?: JsonValue;
  /** The chain's finished hops, oldest first. */
  done: readonly { agentName: string; result?: JsonValue; finishedAt: number }[];
};

/** What a hop got back: the result, and the next agent when the reply names one. */
export type ChainReply = { result: JsonValue; handoff?: { target: string; goal?: string } };

/** A handoff as OAP writes it: the next agent and why (and, not OAP's, a narrower goal). */
export type Handoff = { next_agent: string; reason: string; goal?: string };

const handoffSchema = z.object({
  next_agent: z.string().min(1).max(2000),
  // OAP requires a reason; an agent that leaves it out still hands off (its reason reads as empty).
  reason: z.string().max(4000).optional(),
  // Not OAP's: an Agora agent may narrow the next hop's goal.
  goal: z.string().max(4000).optional(),
  task: z.string().max(4000).optional(),
});

/** The handoff a value names (`next_agent`, with its reason); undefined when none or malformed. */
export function readHandoff(value: unknown): Handoff | undefined {
  const parsed = handoffSchema.safeParse(value);
  if (!parsed.success) return undefined;
  const goal = parsed.data.goal ?? parsed.data.task;
  return { next_agent: parsed.data.next_agent, reason: parsed.data.reason ?? '', ...(goal ? { goal } : {}) };
}

/** The handoff a reply names: `handoff.next_agent` in a JSON object body (`handoff.goal` may narrow the goal). */
export function handoffOf(body: unknown): ChainReply['handoff'] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const handoff = readHandoff((body as Record<string, unknown>).handoff);
  return handoff === undefined
    ? undefined
    : { target: handoff.next_agent, ...(handoff.goal ? { goal: handoff.goal } : {}) };
}

/** A result and the handoff it names, if any. */
export function chainReply(result: JsonValue, handoff = handoffOf(result)): ChainReply {
  return { result, ...(handoff ? { handoff } : {}) };
}

/** The goal, with what the previous agent found, as one text (what a natural-language agent reads). */
export function chainText(step: Pick<ChainStep, 'goal' | 'input'>): string {
  if (step.input === undefined || step.input === null) return step.goal;
  const found = typeof step.input === 'string' ? step.input : JSON.stringify(step.input);
  return `${step.goal}\n\nWhat the previous agent found:\n${found}`;
}
