// What the dashboard shows over time, kept in process and bounded: queries per second by path (a ring of
// one-second buckets), cost per query over time by protocol (a ring of wider buckets), per-protocol totals and
// last use, and the latest failures. Fed by `Metrics.observe`: the hot path pays one bucket increment.
import type { Metrics, MetricsObserver, QueryPath } from '../metrics.js';

/** Options of {@link DashboardRecorder}. */
export type RecorderOptions = {
  /** Clock in Unix milliseconds (default: `Date.now`, read every 100 ms while attached rather than per query). */
  now?: () => number;
  /** Width of one cost bucket, in ms (default 10 s). */
  costBucketMs?: number;
  /** Cost buckets kept (default 360: an hour of 10-second buckets). */
  costBuckets?: number;
  /** One-second rate buckets kept (default 120). */
  rateBuckets?: number;
  /** Protocols tracked per bucket and in the totals; beyond, they are counted under `_other` (default 50). */
  maxProtocols?: number;
  /** Failures kept (default 50). */
  maxFailures?: number;
};

/** Queries by path in one one-second bucket. */
export type RateBucket = { at: number; routine: number; llm: number; failure: number };

/** What one protocol cost in one bucket: queries by path, LLM calls and tokens. */
export type CostCell = { routine: number; llm: number; failure: number; llmCalls: number; tokens: number };

/** One cost bucket: its start and its cells by protocol label. */
export type CostBucket = { at: number; protocols: Record<string, CostCell> };

/** A protocol's totals since start (by its label: the document's name). */
export type ProtocolTotals = {
  routine: number;
  llm: number;
  failure: number;
  llmCalls: number;
  tokens: number;
  lastUsedAt: number | null;
};

/** One failure: when, under which protocol label, and the fixed text of the error. */
export type FailureRecord = { at: number; protocol: string; reason: string };

/** A change pushed to live subscribers. */
export type RecorderEvent =
  | { kind: 'query'; at: number; protocol: string; path: QueryPath }
  | { kind: 'llm'; at: number; protocol: string; tokens: number };

const OTHER = '_other';
const MAX_REASON = 200;
const COARSE_MS = 100;
// Queries kept for the Live panel's feed.
const RECENT = 30;

const emptyCell = (): CostCell => ({ routine: 0, llm: 0, failure: 0, llmCalls: 0, tokens: 0 });

type LabelState = { label: string; totals: ProtocolTotals; cell: CostCell | undefined; cellAt: number };

/**
 * Bounded in-process history of an agent's queries and costs, for the dashboard: attach it to a receiver's
 * `Metrics` and read `rates()`, `costs()`, `totals()` and `failures()`; `subscribe` hears each change.
 * @example const recorder = new DashboardRecorder(); const detach = recorder.attach(receiver.counters);
 */
export class DashboardRecorder {
  readonly #now: () => number;
  readonly #costMs: number;
  readonly #costCount: number;
  readonly #rateCount: number;
  readonly #maxProtocols: number;
  readonly #maxFailures: number;
  readonly #rates: RateBucket[] = [];
  readonly #costs: CostBucket[] = [];
  // Per label: its totals and its cell in the current cost bucket, so a query costs one Map lookup.
  readonly #labels = new Map<string, LabelState>();
  readonly #failures: FailureRecord[] = [];
  // A ring of reused entries: recording a query allocates nothing once the ring is full.
  readonly #recent: { at: number; protocol: string; path: QueryPath }[] = [];
  #recentNext = 0;
  readonly #listeners = new Set<(event: RecorderEvent) => void>();
  readonly startedAt: number;

  // Reading the clock costs more than all the counting here (about 100 ns on a virtual machine): unless a clock is
  // injected, queries read this copy, refreshed every 100 ms while the recorder is attached.
  #coarse = Date.now();
  #ticker: NodeJS.Timeout | undefined;
  readonly #injected: boolean;

  constructor(options: RecorderOptions = {}) {
    this.#injected = options.now !== undefined;
    this.#now = options.now ?? (() => this.#coarse);
    this.#costMs = options.costBucketMs ?? 10_000;
    this.#costCount = options.costBuckets ?? 360;
    this.#rateCount = options.rateBuckets ?? 120;
    this.#maxProtocols = options.maxProtocols ?? 50;
    this.#maxFailures = options.maxFailures ?? 50;
    this.startedAt = options.now ? options.now() : Date.now();
  }

  /** Starts recording what `metrics` counts; returns the function that stops it. */
  attach(metrics: Metrics): () => void {
    const observer: MetricsObserver = {
      query: (path, protocol, reason) => this.query(path, protocol, reason),
      llmCall: (protocol, _purpose, input, output) => this.llmCall(protocol, input + output),
    };
    const stop = metrics.observe(observer);
    if (!this.#injected && this.#ticker === undefined) {
      this.#coarse = Date.now();
      this.#ticker = setInterval(() => {
        this.#coarse = Date.now();
      }, COARSE_MS).unref();
    }
    return () => {
      stop();
      if (this.#ticker !== undefined) clearInterval(this.#ticker);
      this.#ticker = undefined;
    };
  }

  /** Records one answered query. */
  query(path: QueryPath, label: string, reason?: string): void {
    const at = this.#now();
    const state = this.#state(label);
    const protocol = state.label;
    this.#rateBucket(at)[path] += 1;
    this.#cell(state, at)[path] += 1;
    state.totals[path] += 1;
    state.totals.lastUsedAt = at;
    if (path === 'failure') {
      this.#failures.push({ at, protocol, reason: (reason ?? 'Failed').slice(0, MAX_REASON) });
      if (this.#failures.length > this.#maxFailures) this.#failures.shift();
    }
    if (this.#recent.length < RECENT) this.#recent.push({ at, protocol, path });
    else {
      const entry = this.#recent[this.#recentNext]!;
      entry.at = at;
      entry.protocol = protocol;
      entry.path = path;
    }
    this.#recentNext = (this.#recentNext + 1) % RECENT;
    if (this.#listeners.size > 0) this.#emit({ kind: 'query', at, protocol, path });
  }

  /** Records one LLM call and its tokens. */
  llmCall(label: string, tokens: number): void {
    const at = this.#now();
    const state = this.#state(label);
    const cell = this.#cell(state, at);
    cell.llmCalls += 1;
    cell.tokens += tokens;
    state.totals.llmCalls += 1;
    state.totals.tokens += tokens;
    if (this.#listeners.size > 0) this.#emit({ kind: 'llm', at, protocol: state.label, tokens });
  }

  /** Hears each recorded query and LLM call; returns the function that stops it. */
  subscribe(listener: (event: RecorderEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Queries per second by path over the last `rateBuckets` seconds, oldest first, quiet seconds included as zeros. */
  rates(): RateBucket[] {
    const now = Math.floor(this.#readNow() / 1000) * 1000;
    const byTime = new Map(this.#rates.map((bucket) => [bucket.at, bucket]));
    const result: RateBucket[] = [];
    for (let at = now - (this.#rateCount - 1) * 1000; at <= now; at += 1000)
      result.push({ ...(byTime.get(at) ?? { at, routine: 0, llm: 0, failure: 0 }) });
    return result;
  }

  /** The cost buckets that saw a query or an LLM call, oldest first. */
  costs(): CostBucket[] {
    return structuredClone(this.#costs);
  }

  /** Width of a cost bucket, in ms. */
  get costBucketMs(): number {
    return this.#costMs;
  }

  /** Totals by protocol label since start. */
  totals(): Record<string, ProtocolTotals> {
    const result: Record<string, ProtocolTotals> = {};
    for (const state of this.#labels.values()) result[state.label] = { ...state.totals };
    return result;
  }

  /** The latest queries (label, path, time), newest first. */
  recent(): RecorderEvent[] {
    const oldestFirst =
      this.#recent.length < RECENT
        ? this.#recent
        : [...this.#recent.slice(this.#recentNext), ...this.#recent.slice(0, this.#recentNext)];
    return oldestFirst.map((entry): RecorderEvent => ({ kind: 'query', ...entry })).reverse();
  }

  /** The latest failures, newest first. */
  failures(): FailureRecord[] {
    return [...this.#failures].reverse();
  }

  // Outside the hot path the clock is read exactly.
  #readNow(): number {
    return this.#injected ? this.#now() : Date.now();
  }

  #emit(event: RecorderEvent): void {
    for (const listener of this.#listeners) listener(event);
  }

  // A label already tracked keeps its own state; a new one past the cap shares `_other`'s (peers choose labels).
  #state(label: string): LabelState {
    let state = this.#labels.get(label);
    if (state === undefined) {
      const name = this.#labels.size < this.#maxProtocols ? label : OTHER;
      state = this.#labels.get(name);
      if (state === undefined) {
        state = {
          label: name,
          totals: { routine: 0, llm: 0, failure: 0, llmCalls: 0, tokens: 0, lastUsedAt: null },
          cell: undefined,
          cellAt: -1,
        };
        this.#labels.set(name, state);
      }
    }
    return state;
  }

  #rateBucket(now: number): RateBucket {
    const at = Math.floor(now / 1000) * 1000;
    const last = this.#rates[this.#rates.length - 1];
    if (last && last.at === at) return last;
    const bucket = { at, routine: 0, llm: 0, failure: 0 };
    this.#rates.push(bucket);
    // Drops buckets older than the window (a quiet minute leaves no empty buckets behind).
    while (this.#rates.length > 0 && this.#rates[0]!.at <= at - this.#rateCount * 1000) this.#rates.shift();
    return bucket;
  }

  #cell(state: LabelState, now: number): CostCell {
    const at = Math.floor(now / this.#costMs) * this.#costMs;
    if (state.cell !== undefined && state.cellAt === at) return state.cell;
    let bucket = this.#costs[this.#costs.length - 1];
    if (!bucket || bucket.at !== at) {
      bucket = { at, protocols: {} };
      this.#costs.push(bucket);
      while (this.#costs.length > 0 && this.#costs[0]!.at <= at - this.#costCount * this.#costMs) this.#costs.shift();
    }
    state.cell = bucket.protocols[state.label] ??= emptyCell();
    state.cellAt = at;
    return state.cell;
  }
}
