// The routine contract, stated once. `define.ts` builds on these types, and the type-check of routines the LLM
// writes (src/generation/checks/typecheck.ts) reads this very file as the declaration of 'agora-agents', so the two
// cannot drift. Keep it self-contained: types only, importing nothing but zod.
import type { z } from 'zod';

/** A JSON value. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };
/** Where a routine writes what happens. */
export type Logger = {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  debug?(message: string): void;
};
/** A protocol document's metadata: its three required keys and any others it has. */
export type ProtocolMetadata = { name: string; description: string; multiround: boolean; [key: string]: unknown };

/** What a streaming routine yields: text to append to the reply as it is written, or a JSON value of progress. */
export type RoutineDelta = JsonValue;

/** A routine's reply: the body, a promise of it, or an async generator yielding deltas and returning it. */
export type RoutineReply<Output> = Output | Promise<Output> | AsyncGenerator<RoutineDelta, Output, void>;

/** What a routine knows about the query it answers. */
export type RoutineContext = {
  conversation: {
    /** The conversation id, or null for a single-round query. */
    id: string | null;
    /** 1 for the first query, then 2, 3… */
    turn: number;
    /** JSON state persisted across the turns of a multiround conversation: mutate it, it is saved after the turn. */
    state: JsonObject;
  };
  protocol: { name: string; hash: string; metadata: ProtocolMetadata };
  logger: Logger;
  /** The agent's tools, by name: each validates its input and returns its output. */
  tools: Record<string, (input: unknown) => Promise<unknown>>;
  /** Aborted when the routine's time limit passes. */
  signal: AbortSignal;
};

/** A routine with zod schemas for its input and output. */
export type RoutineDefinition<Input = unknown, Output = unknown> = {
  input?: z.ZodType<Input>;
  output?: z.ZodType<Output>;
  /** The reply (a success body) to a body that fails `input`; default: the PD's own error, else a failure. */
  invalidInput?: unknown;
  /** Answers a body; an async generator streams: its yields are deltas, its return value the body. */
  handle(body: Input, context: RoutineContext): RoutineReply<Output>;
};

/** A loaded routine, normalized. */
export type Routine = RoutineDefinition<any, any> & { readonly kind: 'routine' };

/** The signature of `defineRoutine`: the handler's body and reply are typed by the schemas. */
export type DefineRoutine = <
  InputSchema extends z.ZodType = z.ZodType<any>,
  OutputSchema extends z.ZodType = z.ZodType<any>,
>(definition: {
  input?: InputSchema;
  output?: OutputSchema;
  invalidInput?: unknown;
  handle(body: z.output<InputSchema>, context: RoutineContext): RoutineReply<z.input<OutputSchema>>;
}) => Routine;

/** A sender (task) routine the LLM writes: the query body from the task's input, the output from the reply. */
export type TaskRoutine = { buildBody(input: any): unknown; parseReply(body: any): unknown };
