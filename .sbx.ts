import { bundleForQuickJS } from './src/generation/quickjs-bundle.js';
import { QuickJSSandbox } from './src/generation/quickjs.js';
import { body, context, GENERATED } from './bench/_sandbox-routine.js';
const variants: Record<string, string> = {
  tool: GENERATED,
  notool: GENERATED.replace('return await context.tools.convert_units(body);', 'return { value: 6.21371, unit: body.to };'),
  noschema: GENERATED.replace(/input: z[^\n]*\n/, '').replace(/output: z[^\n]*\n/, ''),
  bare: GENERATED.replace(/input: z[^\n]*\n/, '').replace(/output: z[^\n]*\n/, '').replace('return await context.tools.convert_units(body);', 'return { value: 6.21371, unit: body.to };'),
};
for (const [name, code] of Object.entries(variants)) {
  const sandbox = new QuickJSSandbox(await bundleForQuickJS(code));
  for (let i = 0; i < 3000; i++) await sandbox.run('handle', body, context());
  let best = Infinity;
  for (let r = 0; r < 3; r++) { const N = 20000; const t = performance.now(); for (let i = 0; i < N; i++) await sandbox.run('handle', body, context()); best = Math.min(best, (performance.now() - t) * 1000 / N); }
  console.log(name, best.toFixed(1), 'µs', JSON.stringify((await sandbox.run('handle', body, context())).value));
  await sandbox.close();
}
