import { Worker } from 'node:worker_threads';
import * as esbuild from 'esbuild';
const code = `import { z } from 'zod'; export default { input: z.object({ a: z.number() }), handle(b) { return { x: b.a * 2, env: process.env.HOME ?? null, f: typeof fetch } } };`;
let t = performance.now();
const r = await esbuild.build({ stdin: { contents: code, resolveDir: '/work/main', loader: 'ts', sourcefile: 'routine.ts' }, bundle: true, write: false, format: 'esm', platform: 'neutral', mainFields: ['module','main'], target: 'node20', logLevel: 'silent' });
const bundled = r.outputFiles[0].text;
console.log('bundle', (performance.now()-t).toFixed(0), 'ms', bundled.length);
const workerSrc = `
import { parentPort } from 'node:worker_threads';
delete globalThis.fetch;
let routine;
parentPort.on('message', async (m) => {
  if (m.type === 'load') { routine = (await import('data:text/javascript;base64,' + m.code)).default; parentPort.postMessage({ type: 'loaded' }); }
  else if (m.type === 'run') { parentPort.postMessage({ type: 'result', id: m.id, value: routine.handle(routine.input.parse(m.body)) }); }
});`;
t = performance.now();
const w = new Worker(new URL('data:text/javascript;base64,' + Buffer.from(workerSrc).toString('base64')), { env: {}, execArgv: [], resourceLimits: { maxOldGenerationSizeMb: 64 } });
const next = () => new Promise((res, rej) => { w.once('message', res); w.once('error', rej); });
w.postMessage({ type: 'load', code: Buffer.from(bundled).toString('base64') });
console.log(await next(), 'spawn+load', (performance.now()-t).toFixed(0));
for (let i = 0; i < 3; i++) { t = performance.now(); w.postMessage({ type: 'run', id: i, body: { a: i } }); console.log(await next(), (performance.now()-t).toFixed(2)); }
t = performance.now();
for (let i = 0; i < 1000; i++) { w.postMessage({ type: 'run', id: i, body: { a: i } }); await next(); }
console.log('per call', ((performance.now()-t)/1000).toFixed(3), 'ms');
await w.terminate();
await esbuild.stop?.();
