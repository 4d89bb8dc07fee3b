import { defineRoutine, z } from 'agora-agents';

// Hand-written: protocols/chance-of-rain.md is answered by the same tool the LLM would call, with no LLM call.
export default defineRoutine({
  input: z.object({ city: z.string(), date: z.string() }),
  async handle({ city, date }, context) {
    try {
      const { precipitation } = z
        .object({ precipitation: z.number() })
        .parse(await context.tools.get_forecast!({ city, date }));
      return { precipitation };
    } catch {
      return { error: 'Unsupported location' };
    }
  },
});
