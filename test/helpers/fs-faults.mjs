// Preloaded into `agora serve` children (NODE_OPTIONS=--import) to give a test the file-system faults it needs:
// - AGORA_TEST_GATED_FILE + AGORA_TEST_GATE: opening that file fails with EMFILE (as if out of descriptors) while the
//   gate file exists, so a test holds the start's first read of protocols/ open for as long as it needs;
// - AGORA_TEST_BLIND_WATCH=1: fs.watch reports nothing (as when the platform drops events), so only a rescan sees a
//   change.
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

const gated = process.env.AGORA_TEST_GATED_FILE;
const gate = process.env.AGORA_TEST_GATE;
if (gated && gate) {
  const open = fs.openSync;
  fs.openSync = (path, ...rest) => {
    if (String(path) === gated && fs.existsSync(gate))
      throw Object.assign(new Error(`EMFILE: too many open files, open '${path}'`), {
        code: 'EMFILE',
        syscall: 'open',
        path,
      });
    return open(path, ...rest);
  };
}
if (process.env.AGORA_TEST_BLIND_WATCH === '1') {
  fs.watch = () => Object.assign(new EventEmitter(), { close() {}, ref() {}, unref() {} });
}
// Named imports of node:fs (`import { openSync } from 'node:fs'`) see the patched functions too.
syncBuiltinESMExports();
