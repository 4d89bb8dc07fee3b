// Shared by `agora chain` and `agora resume`: the run itself, progress lines on stderr, the result on stdout.
import type { HubClient } from '../hub/client.js';
import type { ChainRun, Hop } from '../hub/records.js';
import { plural } from '../_plural.js';
import { printJson, type ParsedArgs } from './_command.js';
import { chainLimits, hubClient } from './_hub.js';
import { wantsJson } from './_options.js';

/** What starts or continues the chain: the chain functions (loaded lazily), the hub, and the checked limits. */
export type ChainStart = (
  chains: typeof import('../hub/chains.js'),
  hub: HubClient,
  limits: ReturnType<typeof chainLimits>,
) => Promise<ChainRun>;

/** Runs a chain command: `start` with the hub `--hub` names and the limits, then its outcome printed (the exit code). */
export async function followChain(args: ParsedArgs, start: ChainStart): Promise<number> {
  const hub = await hubClient(args);
  const run = await start(await import('../hub/chains.js'), hub, chainLimits(args));
  return printOutcome(run, wantsJson(args));
}

/** A hop's time and its agent's reported tokens (`—` for none): `1.2 s, 812 in / 96 out tokens (gpt-4.1-mini)`. */
export function hopFigures(hop: Hop): string {
  const ms = hop.finishedAt - hop.startedAt;
  const time = ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
  const usage = hop.usage;
  if (usage === undefined) return `${time}, tokens —`;
  return `${time}, ${usage.inputTokens} in / ${usage.outputTokens} out tokens${usage.model ? ` (${usage.model})` : ''}`;
}

/** One progress line per hop. */
export function printHop(hop: Hop, run: ChainRun): void {
  const status = hop.ok ? 'ok' : `failed: ${hop.error}`;
  process.stderr.write(
    `hop ${run.hops.length}: ${hop.agentName} (${hop.by}: ${hop.reason}) ${status} [${hopFigures(hop)}]\n`,
  );
}

/** The chain's outcome: its final result (JSON) on stdout; exit code 0 when done, 1 otherwise. */
export function printOutcome(run: ChainRun, json: boolean): number {
  if (json) printJson(run);
  else {
    const last = [...run.hops].reverse().find((hop) => hop.ok);
    // The hops that ran, in order; a failed attempt a resume repeated is counted apart, not as a hop.
    const done = run.hops.filter((hop) => hop.ok);
    const failed = run.hops.length - done.length;
    process.stderr.write(
      `chain ${run.id}: ${run.status}, ${plural(done.length, 'hop')}: ${done.map((hop) => hop.agentName).join(' → ') || 'none'}${failed ? ` (${plural(failed, 'failed attempt')})` : ''}\n`,
    );
    if (last)
      process.stdout.write(`${typeof last.result === 'string' ? last.result : JSON.stringify(last.result, null, 2)}\n`);
  }
  if (run.status === 'done') return 0;
  process.stderr.write(`chain ${run.id} is unfinished (${run.error ?? run.status})\n  ${unfinishedNextStep(run)}\n`);
  return 1;
}

/**
 * What to do about an unfinished chain: `agora resume` where a second try can go further (a hop cap, an agent down, a
 * checkpoint not written), else what can help, since a resume sends the failed hop's query again, unchanged.
 */
export function unfinishedNextStep(run: ChainRun): string {
  const resume = `agora resume ${run.id}`;
  if (run.status === 'capped') return `continue it with: ${resume} (--max-hops <n> allows more hops)`;
  const last = run.hops[run.hops.length - 1];
  const error = last && !last.ok ? (last.error ?? '') : '';
  if (last && last.protocolHash !== undefined && /\(a protocol-level error\)$/.test(error)) {
    // A chain sends {"goal", "input"}; a protocol whose body is JSON of its own shape refuses it, every time.
    const document = `${last.url.replace(/\/+$/, '')}/protocols/${last.protocolHash}`;
    return (
      'a resume would send the same {"goal", "input"} body again: ' +
      `this protocol takes a body of its own (${document}); ` +
      `save that document and query the agent with: agora send ${last.url} '<body>' --protocol <file>`
    );
  }
  if (/No agent matches the goal/.test(run.error ?? ''))
    return `no agent of the hub serves this goal: register one (agora hub register <url>), then: ${resume}`;
  return `continue it with: ${resume}`;
}
