// The hub's chain checkpoints: each written or deleted under the chain's lease (one process runs a chain), cut to
// size, and room made by deleting the oldest finished chains when the hub holds too many or too much.
import { randomUUID } from 'node:crypto';
import { AgoraError } from '../errors.js';
import { chainRunSchema, type ChainRun } from './records.js';
import type { HubStore } from './store.js';

/** The longest free text (goal, error, reason) a checkpoint keeps. */
const MAX_RUN_TEXT = 2000;
/** The shortest and the longest lease a checkpoint may take. */
const MIN_LEASE_MS = 1000;
const MAX_LEASE_MS = 24 * 60 * 60 * 1000;

/** A checkpoint with its free texts (errors, reasons) cut, so what pages show stays small. */
function cutRun(run: ChainRun): ChainRun {
  const cut = (text: string | undefined) => (text === undefined ? undefined : text.slice(0, MAX_RUN_TEXT));
  return {
    ...run,
    goal: run.goal.slice(0, MAX_RUN_TEXT),
    ...(run.error !== undefined ? { error: cut(run.error)! } : {}),
    hops: run.hops.map((hop) => ({
      ...hop,
      reason: cut(hop.reason)!,
      ...(hop.error !== undefined ? { error: cut(hop.error)! } : {}),
    })),
  };
}

/** The bounds of {@link ChainRuns}. */
export type ChainRunLimits = { maxRuns: number; maxRunBytes: number; maxRunsBytes: number };

/**
 * Chain checkpoints in a hub's store, each under its chain's lease: a writer or a deleter that does not hold the
 * lease is refused while another live process holds it, unless it forces the takeover.
 */
export class ChainRuns {
  readonly #store: HubStore;
  readonly #limits: ChainRunLimits;

  constructor(store: HubStore, limits: ChainRunLimits) {
    this.#store = store;
    this.#limits = limits;
  }

  /** Writes a checkpoint; refused while another process holds the chain (unless `force`), when too large, or full. */
  async save(raw: ChainRun, leaseMs: number, force = false): Promise<void> {
    const parsed = chainRunSchema.safeParse(raw);
    if (!parsed.success)
      throw new AgoraError('BAD_REQUEST', `Not a chain checkpoint: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const run = cutRun(parsed.data);
    if (!/^[\w-]{1,64}$/.test(run.id))
      throw new AgoraError('BAD_REQUEST', 'Chain id must be 1-64 letters, digits, - or _');
    const size = Buffer.byteLength(JSON.stringify(run));
    const { maxRunBytes } = this.#limits;
    if (size > maxRunBytes)
      throw new AgoraError(
        'REQUEST_TOO_LARGE',
        `Chain ${run.id}'s checkpoint is ${size} bytes; this hub keeps at most ${maxRunBytes} (--max-run-bytes)`,
      );
    const lease = Math.max(MIN_LEASE_MS, Math.min(leaseMs, MAX_LEASE_MS));
    const previous = await this.#store.getRun(run.id);
    await this.#takeLease(run.id, run.owner, lease, previous, force, 'resume with --force to take it over');
    const previousSize = previous === undefined ? 0 : Buffer.byteLength(JSON.stringify(previous));
    await this.#makeRoom(previous === undefined ? 1 : 0, size - previousSize, run.id);
    await this.#store.putRun(run);
    if (run.status !== 'running') await this.#store.release(leaseKey(run.id), run.owner);
  }

  /**
   * Deletes a chain's checkpoint under the same lease as {@link save}: refused while another process holds the
   * chain, unless the caller is that `owner` or forces it.
   */
  async delete(id: string, owner: string | undefined, force = false): Promise<void> {
    const caller = owner ?? `delete#${randomUUID()}`;
    const previous = await this.#store.getRun(id);
    await this.#takeLease(id, caller, MIN_LEASE_MS, previous, force, 'delete with ?force=true to take it over');
    await this.#store.deleteRun(id);
    await this.#store.release(leaseKey(id), caller);
  }

  /** A chain's last checkpoint. */
  get(id: string): Promise<ChainRun | undefined> {
    return this.#store.getRun(id);
  }

  /** Unfinished chains (running, failed, capped), newest first; all of them with `all`. */
  async list(all = false): Promise<ChainRun[]> {
    const runs = await this.#store.listRuns();
    return runs.filter((run) => all || run.status !== 'done').sort((a, b) => b.updatedAt - a.updatedAt);
  }

  /** Takes (or renews) the chain's lease for `owner`, first releasing the previous owner's when forced. */
  async #takeLease(
    id: string,
    owner: string,
    leaseMs: number,
    previous: ChainRun | undefined,
    force: boolean,
    hint: string,
  ): Promise<void> {
    const key = leaseKey(id);
    if (force) await this.#store.release(key, previous?.owner ?? '');
    if (await this.#store.claim(key, owner, leaseMs)) return;
    const held = await this.#store.getRun(id);
    throw new AgoraError(
      'BAD_REQUEST',
      `Chain ${id} is held by another process (${held?.owner ?? 'unknown'}); ${hint}`,
    );
  }

  /**
   * Deletes the oldest finished chains until one more (`added`) of `growth` more bytes fits; reads runs only when full.
   */
  async #makeRoom(added: number, growth: number, keep: string): Promise<void> {
    const { maxRuns, maxRunsBytes: maxBytes } = this.#limits;
    const usage = await this.#store.runUsage();
    if (usage.count + added <= maxRuns && usage.bytes + growth <= maxBytes) return;
    const runs = await this.#store.listRuns();
    const finished = runs
      .filter((run) => run.status === 'done' && run.id !== keep)
      .sort((a, b) => a.updatedAt - b.updatedAt);
    let { count, bytes } = usage;
    for (const run of finished) {
      if (count + added <= maxRuns && bytes + growth <= maxBytes) break;
      await this.#store.deleteRun(run.id);
      count -= 1;
      bytes -= Buffer.byteLength(JSON.stringify(run));
    }
    if (count + added > maxRuns)
      throw new AgoraError(
        'BAD_REQUEST',
        `The hub holds ${count} unfinished chains (the limit is ${maxRuns}); resume or delete some`,
      );
    if (bytes + growth > maxBytes)
      throw new AgoraError(
        'BAD_REQUEST',
        `The hub's chain checkpoints would exceed ${maxBytes} bytes (--max-runs-bytes); resume or delete some`,
      );
  }
}

/** The lease a chain's writer holds. */
function leaseKey(id: string): string {
  return `run:${id}`;
}
