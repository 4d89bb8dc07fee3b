// The routine both sides of bench/sandbox.ts run: the repository's unit-conversion routine as an LLM would write
// it (zod from 'zod', a tool call) and the same by hand, with the context the receiver would give them.
import { z } from 'zod';
import { silentLogger } from '../src/log.js';
import type { ProtocolDocument } from '../src/protocol/document.js';
import { defineRoutine } from '../src/routine/define.js';
import { defineTool, toolFunction } from '../src/tool/define.js';
import type { SandboxContext } from '../src/generation/sandbox/quickjs.js';
import { convert } from '../tools/convert-units.js';

// The repository's unit-conversion routine, as an LLM would write it (zod from 'zod', a tool call), and by hand.
/** The generated module's source. */
export const GENERATED = `import { z } from 'zod';
import { defineRoutine } from 'agora-agents';
export default defineRoutine({
  input: z.object({ value: z.number().finite(), from: z.string(), to: z.string() }),
  output: z.union([z.object({ value: z.number(), unit: z.string() }), z.object({ error: z.string() })]),
  async handle(body, context) {
    try { return await context.tools.convert_units(body); } catch { return { error: 'Incompatible units' }; }
  },
});
`;
/** The same routine, hand-written. */
export const handWritten = defineRoutine({
  input: z.object({ value: z.number().finite(), from: z.string(), to: z.string() }),
  output: z.union([z.object({ value: z.number(), unit: z.string() }), z.object({ error: z.string() })]),
  async handle(body, context) {
    try {
      return (await context.tools.convert_units!(body)) as { value: number; unit: string };
    } catch {
      return { error: 'Incompatible units' };
    }
  },
});

/** The convert_units tool, as the receiver hands tools to routines (see toolFunction). */
const convertUnits = defineTool({
  name: 'convert_units',
  description: 'Convert a number between units',
  input: z.object({ value: z.number(), from: z.string(), to: z.string() }),
  run: ({ value, from, to }) => ({ value: convert(value, from, to), unit: to }),
});
export const tools = { convert_units: toolFunction(convertUnits) };
const metadata = { name: 'Unit conversion' } as ProtocolDocument['metadata'];
/** The protocol document the receiver would pass. */
export const document = { metadata, content: '' } as unknown as ProtocolDocument;
/** The routine context of a single-round query. */
export const context = (): SandboxContext => ({
  conversation: { id: null, turn: 1, state: {} },
  protocol: { name: 'Unit conversion', hash: 'h', metadata },
  tools,
  logger: silentLogger,
});
/** The query body. */
export const body = { value: 10, from: 'km', to: 'mi' };
