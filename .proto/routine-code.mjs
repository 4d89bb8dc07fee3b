export const ROUTINE = `import { defineRoutine } from 'agora-agents';
import { z } from 'zod';
export default defineRoutine({
  input: z.object({ n: z.number() }),
  output: z.object({ doubled: z.number() }),
  async handle(body, context) {
    const r = z.object({ product: z.number() }).parse(await context.tools.multiply!({ a: body.n, b: 2 }));
    return { doubled: r.product };
  },
});
`;
