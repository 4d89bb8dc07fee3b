import { bundleForQuickJS } from './src/generation/quickjs-bundle.js';
import { QuickJSSandbox } from './src/generation/quickjs.js';
import { body, context, GENERATED } from './bench/_sandbox-routine.js';
const code = process.argv[2] === 'bare' ? GENERATED.replace(/input: z[^\n]*\n/, '').replace(/output: z[^\n]*\n/, '').replace('return await context.tools.convert_units(body);', 'return { value: 6.21371, unit: body.to };') : GENERATED;
const sandbox = new QuickJSSandbox(await bundleForQuickJS(code));
const ctx = context();
for (let i = 0; i < 3000; i++) await sandbox.run('handle', body, ctx);
const N = 100000; const t = performance.now(); for (let i = 0; i < N; i++) await sandbox.run('handle', body, ctx); console.log(((performance.now() - t) * 1000 / N).toFixed(1), 'µs');
await sandbox.close();
