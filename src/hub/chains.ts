import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { AgoraError, describeError } from '../errors.js';
import type { GuardOptions } from '../net/guard.js';
import type { TokenSource } from '../net/token-source.js';
import type { JsonValue } from '../schemas.js';
import { queryAgent, type HopLimits } from './agent-query.js';
import type { ChainRun, Hop } from './records.js';
import type { RouteDecision } from './routing.js';
import { inSpan, linkTo, traceparentOf, TRACING, type Attributes, type SpanOptions } from '../telemetry/tracing.js';

/** What a chain needs from a hub, in process ({@link Hub}) or over HTTP (`HubClient`). */
export interface ChainBackend {
  route(goal: string, handoff?: string): Promise<RouteDecision>;
  /**
   * Writes a checkpoint, taking or renewing the chain's lease for `run.owner`; refused while another owner holds it,
   * unless `force`.
   */
  saveRun(run: ChainRun, leaseMs: number, force?: boolean): Promise<void>;
  getRun(id: string): Promise<ChainRun | undefined>;
  /** A protocol document's text by hash (its reply shape is checked against a hop's reply), when the backend has it. */
  protocolText?(hash: string): Promise<string | undefined>;
  /** Whether the backend accepts agents on private networks (a hub's `allowPrivateAgents`): the hops' default. */
  readonly allowsPrivateAgents?: boolean;
  /** The credentials of the hops, when the backend has its own (a hub's client credentials): the hops' default. */
  readonly tokenSource?: TokenSource | undefined;
}

/** Options of {@link runChain} and {@link resumeChain}. */
export type ChainOptions = {
  /**
   * Hops run by this call at most (default 10); a chain stopped by the cap with a handoff pending is `capped`,
   * resumable.
   */
  maxHops?: number;
  /** Time one agent has to answer (default 60 s). */
  hopTimeoutMs?: number;
  /** Largest reply accepted from an agent (default 1 MiB). */
  maxReplyBytes?: number;
  /** HMAC secret shared with the chain's ROAR agents (default: messages signed with a fresh Ed25519 key). */
  roarSecret?: string;
  /**
   * Let hops reach agents on loopback and private networks (default: the backend's `allowsPrivateAgents`, an
   * in-process hub's setting; else false). Every hop's address is checked when it connects and at each redirect, not
   * only when the agent registered: a name that later resolves to a private address is refused.
   */
  allowPrivateAgents?: boolean;
  /**
   * Where the hops' bearer tokens come from (`ClientCredentials` with `resource: originResource`: each agent's origin
   * its own token); default the backend's.
   */
  tokenSource?: TokenSource;
  /** DNS resolution of the hops' guard, injectable for tests. */
  lookup?: GuardOptions['lookup'];
  /** Take the chain over even when another live process holds it. */
  force?: boolean;
  /** Called after each hop is checkpointed (CLI progress). */
  onHop?(hop: Hop, run: ChainRun): void;
  now?: () => number;
};

const MAX_RESULT_CHARS = 64 * 1024;

/** This process, as a chain's owner: host and pid (so a resume on the same host can tell a dead owner), and a nonce. */
export function processOwner(): string {
  return `${hostname()}#${process.pid}#${randomUUID().slice(0, 8)}`;
}

/** Whether the process named by an owner is gone: only knowable on the same host; false when unsure. */
export function ownerIsGone(owner: string): boolean {
  const [host, pid] = owner.split('#');
  if (host !== hostname() || pid === undefined || !/^\d+$/.test(pid)) return false;
  if (Number(pid) === process.pid) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

// A hop's result goes into every later checkpoint: a huge one is kept as a note rather than carried on.
function bounded(result: JsonValue): JsonValue {
  const text = JSON.stringify(result);
  return text.length <= MAX_RESULT_CHARS ? result : { truncated: true, preview: text.slice(0, 2000) };
}

/**
 * Starts a chain: routes the goal, queries the agent, follows the handoff its reply names, until no handoff is
 * named or the hop cap is reached. A checkpoint goes to the hub after every hop.
 * @example const run = await runChain(new HubClient({ url }), 'research vector databases, then summarise');
 */
export async function runChain(backend: ChainBackend, goal: string, options: ChainOptions = {}): Promise<ChainRun> {
  if (typeof goal !== 'string' || goal.trim() === '')
    throw new AgoraError('BAD_REQUEST', 'goal must be a non-empty string');
  const now = options.now ?? Date.now;
  const run: ChainRun = {
    id: randomUUID(),
    goal,
    status: 'running',
    hops: [],
    next: { goal },
    maxHops: options.maxHops ?? 10,
    createdAt: now(),
    updatedAt: now(),
    owner: processOwner(),
    leaseUntil: 0,
  };
  if (!TRACING.on) return drive(backend, run, options);
  return inSpan('agora.chain', { attributes: { 'agora.chain.id': run.id } }, (span) => {
    const traceparent = traceparentOf(span);
    if (traceparent) run.trace = traceparent;
    return drive(backend, run, options);
  });
}

/**
 * Continues an unfinished chain from its last checkpoint: finished hops are never run again (the hop in flight
 * at a crash may be). Refused while the chain's process is alive and holds it, unless `force`.
 */
export async function resumeChain(backend: ChainBackend, id: string, options: ChainOptions = {}): Promise<ChainRun> {
  const run = await backend.getRun(id);
  if (run === undefined) throw new AgoraError('NOT_FOUND', `No chain ${id} at the hub`);
  if (run.status === 'done' || run.next === null)
    throw new AgoraError('BAD_REQUEST', `Chain ${id} is finished (${run.hops.length} hops)`);
  const now = (options.now ?? Date.now)();
  const force = options.force === true || run.leaseUntil <= now || ownerIsGone(run.owner);
  if (!force)
    throw new AgoraError(
      'BAD_REQUEST',
      `Chain ${id} is being run by ${run.owner} until ${new Date(run.leaseUntil).toISOString()}; wait, or resume with --force`,
    );
  const resumed: ChainRun = {
    ...run,
    status: 'running',
    owner: processOwner(),
    ...(options.maxHops !== undefined ? { maxHops: options.maxHops } : {}),
  };
  if (!TRACING.on) return drive(backend, resumed, { ...options, force: true });
  // A trace of its own, linked to the run that started the chain.
  const attributes = { 'agora.chain.id': run.id, 'agora.chain.resumed_hops': run.hops.length };
  return inSpan('agora.chain.resume', { attributes, links: linkTo(run.trace) }, () =>
    drive(backend, resumed, { ...options, force: true }),
  );
}

/** A hop's span: which agent, chosen how, under which protocol, its place in the chain. */
function hopSpan(hop: Pick<Hop, 'agentId' | 'agentName' | 'by' | 'protocolHash'>, index: number): SpanOptions {
  const attributes: Attributes = {
    'agora.hop.index': index,
    'agora.hop.agent.id': hop.agentId,
    'agora.hop.agent.name': hop.agentName,
    'agora.hop.by': hop.by,
  };
  if (hop.protocolHash) attributes['agora.protocol.hash'] = hop.protocolHash;
  return { attributes };
}

async function drive(backend: ChainBackend, run: ChainRun, options: ChainOptions): Promise<ChainRun> {
  const now = options.now ?? Date.now;
  const tokenSource = options.tokenSource ?? backend.tokenSource;
  const limits: HopLimits = {
    timeoutMs: options.hopTimeoutMs ?? 60_000,
    maxReplyBytes: options.maxReplyBytes ?? 1024 * 1024,
    ...(options.roarSecret ? { roarSecret: options.roarSecret } : {}),
    ...(tokenSource ? { tokenSource } : {}),
    guard: {
      allowPrivateAddresses: options.allowPrivateAgents ?? backend.allowsPrivateAgents ?? false,
      setting: 'allowPrivateAgents',
      ...(options.lookup ? { lookup: options.lookup } : {}),
    },
  };
  // Long enough for one hop and its checkpoint; a crashed owner's lease lapses after this.
  const leaseMs = limits.timeoutMs + 30_000;
  const maxHops = options.maxHops ?? run.maxHops;
  let force = options.force === true;

  const checkpoint = async () => {
    run.updatedAt = now();
    run.leaseUntil = run.status === 'running' ? run.updatedAt + leaseMs : 0;
    try {
      await backend.saveRun(run, leaseMs, force);
    } catch (error) {
      if (error instanceof AgoraError && error.code === 'BAD_REQUEST') throw error;
      throw new AgoraError(
        'PEER_FAILURE',
        `Chain ${run.id}: the checkpoint could not be written (${error instanceof Error ? error.message : String(error)}); resume it with \`agora resume ${run.id}\``,
        { cause: error },
      );
    }
    force = false;
  };

  await checkpoint();
  for (let hops = 0; run.next !== null; hops++) {
    if (hops >= maxHops) {
      run.status = 'capped';
      run.error = `hop cap (${maxHops}) reached with a handoff to ${run.next.target ?? 'the goal'} pending`;
      await checkpoint();
      return run;
    }
    const next = run.next;
    const startedAt = now();
    let decision: RouteDecision;
    try {
      decision = await backend.route(next.goal, next.target);
    } catch (error) {
      // The hub is unreachable or nothing fits: nothing ran, the checkpoint stays where it was.
      run.status = 'failed';
      run.error = `routing ${JSON.stringify(next.goal.slice(0, 100))}${next.target ? ` to ${next.target}` : ''} failed: ${error instanceof Error ? error.message : String(error)}`;
      await checkpoint();
      return run;
    }
    const { agent, protocol } = decision;
    const base = {
      agentId: agent.id,
      agentName: agent.name,
      url: agent.url,
      by: decision.by,
      reason: decision.reason,
      ...(protocol ? { protocolHash: protocol.hash } : {}),
      startedAt,
    };
    let hop: Hop;
    let handoff: { target: string; goal?: string } | undefined;
    try {
      const text =
        protocol === undefined || backend.protocolText === undefined
          ? undefined
          : await backend.protocolText(protocol.hash).catch(() => undefined);
      const done = run.hops.filter((finished) => finished.ok);
      const ask = () =>
        queryAgent(
          agent,
          protocol,
          { runId: run.id, goal: next.goal, ...(next.input !== undefined ? { input: next.input } : {}), done },
          limits,
          text,
        );
      const output = TRACING.on ? await inSpan('agora.hop', hopSpan(base, run.hops.length + 1), ask) : await ask();
      hop = { ...base, ok: true, result: bounded(output.result), finishedAt: now() };
      if (output.usage) hop.usage = output.usage;
      handoff = output.handoff;
    } catch (error) {
      hop = {
        ...base,
        ok: false,
        error: error instanceof Error ? error.message : describeError(error),
        finishedAt: now(),
      };
    }
    run.hops.push(hop);
    if (hop.ok) {
      run.next = handoff ? { target: handoff.target, goal: handoff.goal ?? run.goal, input: hop.result ?? null } : null;
      run.status = run.next === null ? 'done' : 'running';
      delete run.error;
    } else {
      // The failed hop is recorded; `next` is unchanged, so a resume tries it again.
      run.status = 'failed';
      run.error = `${agent.name}: ${hop.error}`;
    }
    await checkpoint();
    options.onHop?.(hop, run);
    if (!hop.ok) return run;
  }
  return run;
}
