// Which protocol a typed task uses with a target: the one chosen before, a fitting one (listed by the peer, found at
// the hub, or in the sender's folder), else one negotiated; verdicts and outcomes kept in the task's state.
import { describeError } from '../errors.js';
import type { UsageSink } from '../llm/model.js';
import { normalizeHash, type ProtocolDocument } from '../protocol/document.js';
import type { SenderThresholds } from './config.js';
import { hubCandidates, type HubBackoff } from './hub-candidates.js';
import { negotiateWithPeer, type NegotiationParts } from './negotiate.js';
import { judgeFit, type TaskLlm, type TaskSchemas, type TaskSpec } from './task-llm.js';
import type { TaskState, TaskStates } from './task-state.js';

/** One task call: what it is, where it goes, and its LLM calls so far. */
export type TaskCall = {
  task: TaskSpec;
  schemas: TaskSchemas;
  base: string;
  key: string;
  calls: number;
  signal: AbortSignal | undefined;
};

/** The LLM steps of a call, as the task runner gives them (its LLM or LLM_UNAVAILABLE, and its usage sink). */
export type CallSteps = { llm(call: TaskCall): TaskLlm; sink(call: TaskCall): UsageSink };

/** Chooses the PD of each task call, sharing one negotiation between concurrent calls at the threshold. */
export class TaskProtocols {
  readonly #parts: NegotiationParts;
  readonly #states: TaskStates;
  readonly #thresholds: Required<SenderThresholds>;
  readonly #steps: CallSteps;
  readonly #negotiations = new Map<string, Promise<ProtocolDocument | undefined>>();
  readonly #hubBackoff: HubBackoff = { until: 0 };

  constructor(parts: NegotiationParts, states: TaskStates, thresholds: Required<SenderThresholds>, steps: CallSteps) {
    this.#parts = parts;
    this.#states = states;
    this.#thresholds = thresholds;
    this.#steps = steps;
  }

  /** The PD a task call uses with a target: the one chosen before, a fitting one, a negotiated one, or none. */
  async choose(call: TaskCall, state: TaskState): Promise<ProtocolDocument | undefined> {
    const { task, key } = call;
    if (state.protocolHash) {
      const chosen = await this.#parts.documents.known(state.protocolHash, call.base, call.signal);
      if (chosen) return chosen;
      this.#parts.logger.warn(
        `task "${task.name}": protocol ${state.protocolHash} is no longer available, looking again`,
      );
      await this.#states.update(key, (current) => void (current.protocolHash = null));
    }
    if (!this.#parts.llm) return undefined;
    // A PD this task was judged fit with before, with any target, costs no LLM call: the target listing it is enough,
    // from the first use on. Judging new candidates waits for the threshold.
    const shared = await this.#states.fits(task.name);
    if (state.uses < this.#thresholds.lookForProtocolFrom) {
      if (!Object.values(shared).some(Boolean)) return undefined;
      const listed = await this.#listed(call, state);
      const known = listed.find((candidate) => shared[candidate.hash] === true);
      if (known)
        await this.#states.update(key, (current) => {
          current.protocolHash = known.hash;
          current.verdicts[known.hash] = true;
        });
      return known;
    }
    for (const candidate of rankForTask(await this.#candidates(call, state), task, shared)) {
      let fits = state.verdicts[candidate.hash] ?? shared[candidate.hash];
      if (fits === undefined) {
        fits = await judgeFit(this.#steps.llm(call), task, call.schemas, candidate);
        await this.#states.keepFit(task.name, candidate.hash, fits);
        this.#parts.logger.info(
          `task "${task.name}": protocol "${candidate.metadata.name}" ${candidate.hash} judged ${fits ? 'a fit' : 'no fit'}`,
        );
      }
      const verdict = fits;
      if (state.verdicts[candidate.hash] === undefined || fits)
        await this.#states.update(key, (current) => {
          current.verdicts[candidate.hash] = verdict;
          if (verdict) current.protocolHash = candidate.hash;
        });
      if (fits) return candidate;
    }
    if (state.uses < this.#thresholds.negotiateFrom || state.negotiation) return undefined;
    // Concurrent calls at the threshold share one negotiation.
    let pending = this.#negotiations.get(key);
    if (!pending) {
      pending = this.#negotiate(call).finally(() => this.#negotiations.delete(key));
      this.#negotiations.set(key, pending);
    }
    return pending;
  }

  async #negotiate(call: TaskCall): Promise<ProtocolDocument | undefined> {
    const { task, schemas, base, key } = call;
    try {
      const result = await negotiateWithPeer(
        this.#parts,
        base,
        {
          name: task.name,
          description: task.description,
          ...(schemas.input ? { inputSchema: schemas.input } : {}),
          ...(schemas.output ? { outputSchema: schemas.output } : {}),
        },
        { onUsage: this.#steps.sink(call), signal: call.signal },
      );
      const hash = result.document.hash;
      await this.#states.update(key, (current) => {
        current.protocolHash = hash;
        current.verdicts[hash] = true;
        current.negotiation = {
          outcome: 'agreed',
          hash,
          rounds: result.rounds,
          at: new Date().toISOString(),
          ...(result.path ? { path: result.path } : {}),
        };
      });
      return result.document;
    } catch (error) {
      // A failed negotiation is not a failed task: natural language still works, and it is not tried again.
      this.#parts.logger.warn(`task "${task.name}": negotiation with ${base} failed: ${describeError(error)}`);
      await this.#states.update(
        key,
        (current) =>
          void (current.negotiation = {
            outcome: 'failed',
            error: error instanceof Error ? error.message : String(error),
            at: new Date().toISOString(),
          }),
      );
      return undefined;
    }
  }

  /**
   * Candidate PDs for a target: those its `/wellknown` lists (and serves), then those the hub finds for the task
   * (when the sender has one), then those in `<dir>/protocols/`.
   */
  async #candidates(call: TaskCall, state: TaskState): Promise<ProtocolDocument[]> {
    const found = new Map((await this.#listed(call, state)).map((document) => [document.hash, document]));
    if (this.#parts.hub) {
      const skip = (hash: string) => found.has(hash) || state.verdicts[hash] === false;
      for (const document of await hubCandidates(
        this.#parts.hub,
        this.#parts.documents,
        call.task,
        skip,
        this.#parts.logger,
        this.#hubBackoff,
      ))
        found.set(document.hash, document);
    }
    for (const document of await this.#parts.documents.local())
      if (!found.has(document.hash) && state.verdicts[document.hash] !== false) found.set(document.hash, document);
    return [...found.values()];
  }

  /** The PDs a target's `/wellknown` lists (and serves), but those judged unfit with it. */
  async #listed(call: TaskCall, state: TaskState): Promise<ProtocolDocument[]> {
    const { base, signal } = call;
    const found = new Map<string, ProtocolDocument>();
    try {
      const listing = (await this.#parts.documents.listing(base, signal)) ?? {};
      for (const [key, sources] of Object.entries(listing)) {
        const hash = normalizeHash(key);
        // A PD judged unfit is not fetched again.
        if (!hash || state.verdicts[hash] === false || found.has(hash)) continue;
        const document = await this.#parts.documents.peer(base, hash, sources, signal);
        if (document) found.set(hash, document);
      }
    } catch (error) {
      this.#parts.logger.warn(`looking for protocols at ${base}: ${describeError(error)}`);
    }
    return [...found.values()];
  }
}

const words = (text: string) =>
  new Set(
    text
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .filter((word) => word.length > 3),
  );

/**
 * Candidates in the order they are judged, which stops at the first fit: those already judged fit for the task
 * first (no LLM call), then by the words (of four letters or more) their name and description share with the
 * task's name and description, the listing's order among equals.
 */
export function rankForTask(
  candidates: readonly ProtocolDocument[],
  task: { name: string; description: string },
  fits: Readonly<Record<string, boolean>>,
): ProtocolDocument[] {
  const wanted = words(`${task.name} ${task.description}`);
  const score = (document: ProtocolDocument) => {
    if (fits[document.hash] === true) return Infinity;
    // A word of the PD's name counts twice: names say what a protocol is for, descriptions say more around it.
    let shared = 0;
    for (const word of words(document.metadata.name)) if (wanted.has(word)) shared += 2;
    for (const word of words(document.metadata.description)) if (wanted.has(word)) shared += 1;
    return shared;
  };
  return candidates
    .map((document, index) => ({ document, index, score: score(document) }))
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .map((entry) => entry.document);
}
