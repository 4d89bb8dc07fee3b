#!/usr/bin/env node
// Runs the compiled CLI; `npm ci` builds it through the `prepare` script.
import { main } from '../dist/cli/main.js';

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (error) => { console.error(`agora: ${error instanceof Error ? error.message : String(error)}`); process.exitCode = 1; },
);
