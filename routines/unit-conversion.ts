import { defineRoutine, z } from 'agora-agents';

// The same tool the LLM would call: the routine and the LLM fallback agree by construction.
export default defineRoutine({
  input: z.object({ value: z.number().finite(), from: z.string(), to: z.string() }),
  async handle(body, context) {
    try {
      return await context.tools.convert_units!(body);
    } catch {
      return { error: 'Incompatible units' };
    }
  },
});
