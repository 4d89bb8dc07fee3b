// Shared by `agora chain` and `agora resume`: progress lines on stderr, the result on stdout.
import type { ChainRun, Hop } from '../hub/records.js';
import { printJson } from './_command.js';

/** One progress line per hop. */
export function printHop(hop: Hop, run: ChainRun): void {
  const status = hop.ok ? 'ok' : `failed: ${hop.error}`;
  process.stderr.write(`hop ${run.hops.length}: ${hop.agentName} (${hop.by}: ${hop.reason}) ${status}\n`);
}

/** The chain's outcome: its final result (JSON) on stdout; exit code 0 when done, 1 otherwise. */
export function printOutcome(run: ChainRun, json: boolean): number {
  if (json) printJson(run);
  else {
    const last = [...run.hops].reverse().find((hop) => hop.ok);
    process.stderr.write(`chain ${run.id}: ${run.status}, ${run.hops.length} hop(s): ${run.hops.map((hop) => hop.agentName).join(' → ') || 'none'}\n`);
    if (last) process.stdout.write(`${typeof last.result === 'string' ? last.result : JSON.stringify(last.result, null, 2)}\n`);
  }
  if (run.status === 'done') return 0;
  process.stderr.write(`chain ${run.id} is unfinished (${run.error ?? run.status}); continue it with: agora resume ${run.id}\n`);
  return 1;
}
