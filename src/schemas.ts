import { z } from 'zod';
import { AgoraError, describeError } from './errors.js';

/** Any JSON value. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** A value as JSON (a copy), or BAD_REQUEST naming `what` when it is missing or not JSON. */
export function toJsonValue(value: unknown, what: string): JsonValue {
  if (value === undefined) throw new AgoraError('BAD_REQUEST', `${what} is required`);
  try {
    return JSON.parse(JSON.stringify(value)) as JsonValue;
  } catch (error) {
    throw new AgoraError('BAD_REQUEST', `${what} is not JSON: ${describeError(error)}`);
  }
}

/** A JSON value as text: a string as it is, anything else serialized. */
export function jsonText(body: JsonValue): string {
  return typeof body === 'string' ? body : JSON.stringify(body);
}

const nullish = <T extends z.ZodType>(schema: T) => schema.nullable().optional();

/** `POST /`: a new query (spec §2). Unknown fields are ignored. */
export const queryRequestSchema = z.object({
  protocolHash: nullish(z.string({ error: 'protocolHash must be a string or null' })),
  protocolSources: nullish(
    z.array(z.string({ error: 'protocolSources must hold strings' }), {
      error: 'protocolSources must be an array of strings or null',
    }),
  ),
  body: z.unknown().refine((value) => value !== undefined, { message: 'body is required' }),
  multiround: nullish(z.boolean({ error: 'multiround must be a boolean' })),
});

/** A new query as received. */
export type QueryRequest = {
  protocolHash?: string | null;
  protocolSources?: string[] | null;
  body: JsonValue;
  multiround?: boolean | null;
};

/** `POST /conversations/:id`: a follow-up (spec §2). A repeated hash, sources, multiround or status are accepted. */
export const followUpRequestSchema = z.object({
  protocolHash: nullish(z.string({ error: 'protocolHash must be a string or null' })),
  protocolSources: nullish(z.array(z.string(), { error: 'protocolSources must be an array of strings or null' })),
  body: z.unknown().refine((value) => value !== undefined, { message: 'body is required' }),
  multiround: nullish(z.boolean({ error: 'multiround must be a boolean' })),
  status: z.unknown().optional(),
});

/** A follow-up as received. */
export type FollowUpRequest = {
  protocolHash?: string | null;
  protocolSources?: string[] | null;
  body: JsonValue;
};

/** A success reply (spec §2). */
export type SuccessResponse = {
  status: 'success';
  body: JsonValue;
  conversationId?: string;
  conversationExpires?: number;
};

/** An Agora-level failure reply (spec §2). */
export type FailureResponse = { status: 'failure'; error: string };

/** Any reply of a receiver. */
export type QueryResponse = SuccessResponse | FailureResponse;

/** A reply as read by a sender: liberal, both failure shapes (ours and the Python SDK's `error`+`message`). */
export const peerResponseSchema = z.union([
  z.object({
    status: z.literal('success'),
    body: z.unknown(),
    conversationId: z.string().optional(),
    conversationExpires: z.number().optional(),
  }),
  z.object({ status: z.literal('failure'), error: z.string() }),
  z.object({ status: z.literal('error'), message: z.string() }),
]);

/** `GET /wellknown`: hash → sources. */
export const wellknownSchema = z.record(z.string(), z.array(z.string()));

/** The protocols an agent lists at `/wellknown`. */
export type Wellknown = z.infer<typeof wellknownSchema>;
