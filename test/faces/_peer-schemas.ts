// The peers' wire shapes, read strictly (unknown fields refused): what their own SDKs parse. A2A 1.0 from
// @a2a-js/sdk 1.3's types (the proto JSON names), A2A 0.3 from its JSON schema's event kinds, OAP 0.3's TaskEnvelope
// and Handoff from its README and field rules, ROAR's message and StreamEvent from its golden fixtures.
import { z } from 'zod';

const json = z.json();
const metadata = z.record(z.string(), json).optional();

// A2A 1.0 (proto JSON, as @a2a-js/sdk 1.3's `fromJSON` and a2a-python 1.0's strict parser read it).
const part10 = z
  .strictObject({
    text: z.string().optional(),
    data: json.optional(),
    url: z.string().optional(),
    raw: z.string().optional(),
    mediaType: z.string().optional(),
    filename: z.string().optional(),
    metadata,
  })
  .refine(
    (part) => [part.text, part.data, part.url, part.raw].filter((value) => value !== undefined).length === 1,
    'a part holds exactly one of text, data, url, raw',
  );
const message10 = z.strictObject({
  messageId: z.string(),
  contextId: z.string().optional(),
  taskId: z.string().optional(),
  role: z.enum(['ROLE_USER', 'ROLE_AGENT']),
  parts: z.array(part10).min(1),
  metadata,
  extensions: z.array(z.string()).optional(),
  referenceTaskIds: z.array(z.string()).optional(),
});
const state10 = z.enum([
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_REJECTED',
  'TASK_STATE_AUTH_REQUIRED',
]);
const status10 = z.strictObject({ state: state10, message: message10.optional(), timestamp: z.string().optional() });
const artifact10 = z.strictObject({
  artifactId: z.string(),
  name: z.string().optional(),
  description: z.string().optional(),
  parts: z.array(part10).min(1),
  metadata,
  extensions: z.array(z.string()).optional(),
});
const task10 = z.strictObject({
  id: z.string(),
  contextId: z.string(),
  status: status10,
  artifacts: z.array(artifact10).optional(),
  history: z.array(message10).optional(),
  metadata,
});

/** A2A 1.0's `StreamResponse`: exactly one of task, message, statusUpdate, artifactUpdate. No `final` anywhere. */
export const a2aStreamResponse10 = z.union([
  z.strictObject({ task: task10 }),
  z.strictObject({ message: message10 }),
  z.strictObject({
    statusUpdate: z.strictObject({ taskId: z.string(), contextId: z.string(), status: status10, metadata }),
  }),
  z.strictObject({
    artifactUpdate: z.strictObject({
      taskId: z.string(),
      contextId: z.string(),
      artifact: artifact10,
      append: z.boolean().optional(),
      lastChunk: z.boolean().optional(),
      metadata,
    }),
  }),
]);

// A2A 0.3 (its JSON schema: `kind` discriminators, lower-case states, `final` on status updates).
const part03 = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('text'), text: z.string(), metadata }),
  z.strictObject({ kind: z.literal('data'), data: z.record(z.string(), json), metadata }),
]);
const message03 = z.strictObject({
  kind: z.literal('message'),
  messageId: z.string(),
  contextId: z.string().optional(),
  taskId: z.string().optional(),
  role: z.enum(['user', 'agent']),
  parts: z.array(part03).min(1),
  metadata,
});
const status03 = z.strictObject({
  state: z.enum([
    'submitted',
    'working',
    'input-required',
    'completed',
    'canceled',
    'failed',
    'rejected',
    'auth-required',
    'unknown',
  ]),
  message: message03.optional(),
  timestamp: z.string().optional(),
});
const artifact03 = z.strictObject({
  artifactId: z.string(),
  name: z.string().optional(),
  description: z.string().optional(),
  parts: z.array(part03).min(1),
  metadata,
});

/** A2A 0.3's streamed results: a Task, a TaskStatusUpdateEvent (with its required `final`) or a TaskArtifactUpdateEvent. */
export const a2aStreamResult03 = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('task'),
    id: z.string(),
    contextId: z.string(),
    status: status03,
    artifacts: z.array(artifact03).optional(),
    history: z.array(message03).optional(),
    metadata,
  }),
  z.strictObject({
    kind: z.literal('status-update'),
    taskId: z.string(),
    contextId: z.string(),
    status: status03,
    final: z.boolean(),
    metadata,
  }),
  z.strictObject({
    kind: z.literal('artifact-update'),
    taskId: z.string(),
    contextId: z.string(),
    artifact: artifact03,
    append: z.boolean().optional(),
    lastChunk: z.boolean().optional(),
    metadata,
  }),
]);

/** A JSON-RPC 2.0 success carrying `result`. */
export const rpcSuccess = <T extends z.ZodType>(result: T) =>
  z.strictObject({ jsonrpc: z.literal('2.0'), id: z.union([z.string(), z.number(), z.null()]), result });

export { oapHandoff, oapStep, oapStepWritten, oapTaskEnvelope, oapTaskEnvelopeSent } from '../helpers/oap-schema.js';

// ROAR 1.0 (its golden fixtures message.json and stream-event.json).
const roarIdentity = z.strictObject({
  did: z.string().startsWith('did:'),
  display_name: z.string(),
  agent_type: z.string(),
  capabilities: z.array(z.string()),
  version: z.string(),
  public_key: z.string().nullable(),
});
const roarAuth = z.union([z.strictObject({}), z.strictObject({ signature: z.string(), timestamp: z.number() })]);

/** ROAR's ROARMessage. */
export const roarMessage = z.strictObject({
  roar: z.literal('1.0'),
  id: z.string(),
  from: roarIdentity,
  to: z.looseObject({ did: z.string() }),
  intent: z.enum(['execute', 'delegate', 'update', 'ask', 'respond', 'notify', 'discover']),
  payload: z.record(z.string(), json),
  context: z.record(z.string(), json),
  auth: roarAuth,
  timestamp: z.number(),
});

/** The last frame of a reply over ROAR's WebSocket whose deltas were asked for: the reply ROARMessage, plus `type: "done"`. */
export const roarDoneFrame = roarMessage.extend({ type: z.literal('done') });

/** A delta frame before it. */
export const roarDeltaFrame = z.strictObject({ type: z.literal('delta'), delta: z.string() });

/** ROAR's StreamEvent (`session_id` a string, `""` by default). */
export const roarStreamEvent = z.strictObject({
  type: z.literal('task_update'),
  source: z.string().startsWith('did:roar:'),
  session_id: z.string(),
  data: z.record(z.string(), json),
  timestamp: z.number(),
});

/** The `data:` payloads of an SSE text, in order. */
export function sseData(text: string): unknown[] {
  return text
    .split('\n\n')
    .map((block) =>
      block
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n'),
    )
    .filter((data) => data.length > 0)
    .map((data) => JSON.parse(data) as unknown);
}
