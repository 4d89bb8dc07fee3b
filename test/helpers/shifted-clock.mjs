// Preloaded into `agora serve` children (NODE_OPTIONS=--import): their Date.now() runs ahead by the milliseconds
// written in the file AGORA_TEST_CLOCK_FILE names, so a test moves the processes' clock instead of sleeping.
import { readFileSync } from 'node:fs';

const file = process.env.AGORA_TEST_CLOCK_FILE;
if (file) {
  const realNow = Date.now.bind(Date);
  Date.now = () => realNow() + Number(readFileSync(file, 'utf8'));
}
