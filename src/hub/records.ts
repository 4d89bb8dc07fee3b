// What the hub keeps, as zod schemas: records read back from Redis or from another hub are parsed, never trusted.
import { z } from 'zod';
import { PEER_KINDS } from '../bindings/index.js';
import type { JsonValue } from '../schemas.js';

const json = z.custom<JsonValue>((value) => value !== undefined);

/** A protocol an agent serves, as the directory saw it (its document verified by hash). */
export const agentProtocolSchema = z.object({
  hash: z.string(),
  name: z.string(),
  description: z.string(),
  multiround: z.boolean(),
});

/** One protocol an agent serves. */
export type AgentProtocol = z.infer<typeof agentProtocolSchema>;

/** An agent in the directory. */
export const agentRecordSchema = z.object({
  /** Stable for a URL: registering the same URL again updates the record. */
  id: z.string(),
  url: z.string(),
  name: z.string(),
  description: z.string(),
  /** How the hub talks to it: `agora` (spec §2: `/wellknown`, `POST /`), or a binding's kind (`roar`, `oap`, `a2a`…). */
  kind: z.enum(PEER_KINDS),
  protocols: z.array(agentProtocolSchema),
  /** Capabilities announced by an OAP `GET /`, a ROAR card (its capabilities and skills) or an A2A card (its skills). */
  capabilities: z.array(z.string()),
  status: z.enum(['up', 'down']),
  /** Consecutive checks the agent failed (reset when it answers). */
  missedChecks: z.number().int(),
  registeredAt: z.number(),
  /** When the agent last answered a check (Unix ms). */
  lastSeen: z.number(),
  lastChecked: z.number(),
  /** Why the last check failed. */
  lastError: z.string().optional(),
  /** A digest of the token the agent was first registered with: only that token may reuse its name (never served). */
  registrant: z.string().optional(),
});

/** An agent in the directory. */
export type AgentRecord = z.infer<typeof agentRecordSchema>;

/** One finished (or failed) hop of a chain. */
export const hopSchema = z.object({
  agentId: z.string(),
  agentName: z.string(),
  url: z.string(),
  /** How the agent was chosen: `handoff`, `keyword`, `llm`. */
  by: z.string(),
  reason: z.string(),
  protocolHash: z.string().optional(),
  ok: z.boolean(),
  result: json.optional(),
  error: z.string().optional(),
  startedAt: z.number(),
  finishedAt: z.number(),
  /** The LLM usage the agent reported for its turn (Agora's `Agora-Usage` header); absent when it reported none. */
  usage: z
    .object({
      inputTokens: z.number().int().nonnegative(),
      outputTokens: z.number().int().nonnegative(),
      model: z.string().max(100).optional(),
    })
    .optional(),
});

/** One hop of a chain. */
export type Hop = z.infer<typeof hopSchema>;

/** Where a chain goes next: an explicit handoff target, or the goal routed afresh. */
export const nextStepSchema = z.object({
  /** An agent's directory name, id or URL; absent: route the goal by keyword/LLM. */
  target: z.string().optional(),
  /** The goal for the next hop (a handoff may narrow it). */
  goal: z.string(),
  /** What the previous hop answered, handed to the next. */
  input: json.optional(),
});

/** Where a chain goes next. */
export type NextStep = z.infer<typeof nextStepSchema>;

/** A chain's checkpoint, written to the hub's store after every hop. */
export const chainRunSchema = z.object({
  id: z.string(),
  goal: z.string(),
  /** `running`, `failed` and `capped` (hop cap reached with a handoff pending) are unfinished, listed by `agora runs`. */
  status: z.enum(['running', 'failed', 'capped', 'done']),
  hops: z.array(hopSchema),
  /** Null when the chain is finished. */
  next: nextStepSchema.nullable(),
  maxHops: z.number().int(),
  createdAt: z.number(),
  updatedAt: z.number(),
  /** The process running it (`host#pid#nonce`) and until when it holds the chain (Unix ms): a resume before then is refused. */
  owner: z.string(),
  leaseUntil: z.number(),
  error: z.string().optional(),
  /** The W3C `traceparent` of the span that started the chain (when traced): a resume's trace links to it. */
  trace: z.string().max(55).optional(),
});

/** A chain's checkpoint. */
export type ChainRun = z.infer<typeof chainRunSchema>;

/** A document in the protocol database: what an agent's protocol lists (hash and metadata), and when it was published. */
export const catalogueEntrySchema = agentProtocolSchema.extend({ publishedAt: z.number() });

/** A document in the protocol database. */
export type CatalogueEntry = z.infer<typeof catalogueEntrySchema>;
