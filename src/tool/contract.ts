// The tool contract, stated once: `define.ts` builds on these types, and the type-check of hand-written tools
// (src/generation/checks/typecheck.ts) reads this very file into its declaration of 'agora-agents'. Keep it
// self-contained: types only, importing nothing but zod.
import type { z } from 'zod';

/** What a tool's `run` receives besides its input. */
export type ToolContext = {
  /** Aborted when the query that called the tool gives up (timeout, shutdown). */
  signal?: AbortSignal;
};

/** A capability of an agent, callable by its LLM (tool use) and by its routines (`context.tools`). */
export type Tool<Input = any, Output = unknown> = {
  readonly name: string;
  readonly description: string;
  readonly input: z.ZodType<Input>;
  run(input: Input, context: ToolContext): Output | Promise<Output>;
};

/** The signature of `defineTool`: the input of `run` is typed by the schema. */
export type DefineTool = <Schema extends z.ZodType, Output>(definition: {
  name: string;
  description: string;
  input: Schema;
  run(input: z.output<Schema>, context: ToolContext): Output | Promise<Output>;
}) => Tool<z.output<Schema>, Output>;
