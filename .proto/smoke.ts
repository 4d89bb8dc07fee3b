import { bundleGeneratedModule, SandboxedModule, RoutineTypeChecker } from '../src/routine/generate.js';
const code = `import { defineRoutine } from 'agora-agents';
import { z } from 'zod';
export default defineRoutine({
  input: z.object({ n: z.number() }),
  output: z.object({ doubled: z.number() }),
  async handle(body, context) {
    const r = z.object({ product: z.number() }).parse(await context.tools.multiply!({ a: body.n, b: 2 }));
    context.conversation.state.count = (Number(context.conversation.state.count ?? 0)) + 1;
    context.logger.info('hello ' + (process as any)?.env?.HOME);
    return { doubled: r.product };
  },
});
`;
const checker = new RoutineTypeChecker();
for (let i = 0; i < 3; i++) { const t = performance.now(); const r = await checker.check(code, 'routine'); console.log('typecheck', r.ms, Math.round(performance.now() - t), r.errors); }
console.log(await checker.check(code.replace('doubled: r.product', 'doubled: "x"'), 'routine'));
let t = performance.now();
const bundle = await bundleGeneratedModule(code);
console.log('bundle ms', Math.round(performance.now() - t), bundle.length);
try { await bundleGeneratedModule(`import fs from 'node:fs'; export default fs;`); } catch (e) { console.log('refused:', (e as Error).message); }
const mod = new SandboxedModule(bundle, { timeoutMs: 500 });
const ctx = { conversation: { id: null, turn: 1, state: {} as any }, protocol: { name: 'x', hash: 'h', metadata: { name: 'x', description: '', multiround: false } }, tools: { multiply: async (i: any) => ({ product: i.a * i.b }) }, logger: { info: (m: string) => console.log('LOG', m), warn() {}, error() {} } };
t = performance.now();
console.log(await mod.run('handle', { n: 21 }, ctx), 'first', Math.round(performance.now() - t));
t = performance.now();
for (let i = 0; i < 200; i++) await mod.run('handle', { n: i }, ctx);
console.log('per call with tool', ((performance.now() - t) / 200).toFixed(3));
console.log(await mod.run('handle', { n: 'x' }, ctx));
console.log(await mod.run('checkOutput', { doubled: 'no' }));
await mod.close();
const loop = new SandboxedModule(await bundleGeneratedModule(`export default { handle(b: any) { if (b.loop) while (true) {} return 1; } };`), { timeoutMs: 300 });
t = performance.now();
console.log(await loop.run('handle', { loop: true }, ctx).catch((e) => e.message), Math.round(performance.now() - t));
console.log(await loop.run('handle', { loop: false }, ctx));
await loop.close();
await checker.close();
