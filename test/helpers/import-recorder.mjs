// Preloaded with `--import`: records every module the process resolves (ESM through a resolve hook, CommonJS
// through require.cache), so a test can say which packages an import pulled in. `globalThis.loadedPackages()`.
import { createRequire, register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';

const resolved = new Set();
const { port1, port2 } = new MessageChannel();
port1.on('message', (url) => resolved.add(url));
port1.unref();
register('./import-recorder-hooks.mjs', { parentURL: import.meta.url, data: { port: port2 }, transferList: [port2] });

const require = createRequire(import.meta.url);

/** The npm packages loaded so far, by name (`ioredis`, `@scope/name`). */
globalThis.loadedPackages = async () => {
  // The hooks thread posts asynchronously: let its messages arrive.
  for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setTimeout(resolve, 20));
  const paths = [...resolved, ...Object.keys(require.cache)];
  const names = new Set();
  for (const path of paths) {
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(decodeURIComponent(path));
    if (match) names.add(match[1]);
  }
  return [...names].sort();
};
