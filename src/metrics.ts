import { plural } from './_plural.js';

/** How a query was answered. */
export type QueryPath = 'routine' | 'llm' | 'failure';

/** The label for queries under no protocol. */
export const NATURAL_LANGUAGE = 'natural_language';

type Labels = Record<string, string>;
/** A counter's value, shared by its series and the hot path's cache. */
type Cell = { value: number };
type Histogram = { buckets: number[]; sum: number; count: number };
/** A label's capped value, its query counters by path and its routine histogram, found once. */
type LabelCells = { protocol: string; queries: Partial<Record<QueryPath, Cell>>; latency?: Histogram };

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Distinct label sets kept per metric; beyond, new protocols are counted under {@link OTHER_PROTOCOL}. */
export const MAX_SERIES = 1000;

/** The protocol label once {@link MAX_SERIES} is reached. */
export const OTHER_PROTOCOL = '_other';

/** Longest label value written; longer ones (a peer's document name) are cut, with `…`. */
export const MAX_LABEL_LENGTH = 64;

/** A label value from a peer, capped at {@link MAX_LABEL_LENGTH} characters. */
function capLabel(value: string): string {
  return value.length > MAX_LABEL_LENGTH ? `${value.slice(0, MAX_LABEL_LENGTH - 1)}…` : value;
}

// Protocol labels come from peers (document names, unknown hashes): without a bound, a peer sending made-up
// protocols would grow memory and the /metrics page without limit.
function bounded(series: Map<string, unknown>, labels: Labels): Labels {
  if (series.size < MAX_SERIES || series.has(labelKey(labels))) return labels;
  return { ...labels, protocol: OTHER_PROTOCOL };
}

function labelKey(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map((key) => `${key}="${String(labels[key]).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`)
    .join(',');
}

/**
 * Told of each counted query and LLM call, synchronously: the dashboard's recorder increments a time bucket here.
 * An observer must be cheap and must not throw (it runs on the hot path).
 */
export type MetricsObserver = {
  query?(path: QueryPath, protocol: string, reason: string | undefined): void;
  llmCall?(protocol: string, purpose: string, inputTokens: number, outputTokens: number): void;
};

/** Totals, for summaries and benchmarks. */
export type MetricsSnapshot = {
  queries: Record<QueryPath, number>;
  llmCalls: number;
  inputTokens: number;
  outputTokens: number;
  /** Streamed replies and resumptions begun. */
  streams: number;
  /** Pieces of replies streamed. */
  deltas: number;
  /** Turns aborted because their streaming client went away. */
  abortedCalls: number;
};

/** What a stream serves: a new query, a follow-up, or a resumption (`GET /conversations/:id/events`). */
export type StreamKind = 'query' | 'follow_up' | 'resume';

/**
 * Counts what an agent does and what it costs: queries by path and protocol, LLM calls and tokens by
 * protocol and purpose, routine latency. Renders Prometheus text for `GET /metrics`.
 */
export class Metrics {
  readonly #queries = new Map<string, Cell>();
  readonly #llmCalls = new Map<string, number>();
  readonly #tokens = new Map<string, number>();
  readonly #latency = new Map<string, Histogram>();
  readonly #totals: MetricsSnapshot = {
    queries: { routine: 0, llm: 0, failure: 0 },
    llmCalls: 0,
    inputTokens: 0,
    outputTokens: 0,
    streams: 0,
    deltas: 0,
    abortedCalls: 0,
  };
  readonly #streams: Record<StreamKind, number> = { query: 0, follow_up: 0, resume: 0 };

  #observers: MetricsObserver[] = [];

  // The hot path's cells by label as given: a query and its routine's latency cost one Map lookup, not a label key
  // built and escaped each time (it showed in profiles). Bounded like the series it points into.
  readonly #hot = new Map<string, LabelCells>();

  #cellsOf(label: string): LabelCells {
    let cells = this.#hot.get(label);
    if (cells === undefined) {
      cells = { protocol: capLabel(label), queries: {} };
      if (this.#hot.size < MAX_SERIES * 4) this.#hot.set(label, cells);
    }
    return cells;
  }

  // The entry of a series for these labels (bounded: past MAX_SERIES, new protocols share `_other`), made on first use.
  #entry<T>(series: Map<string, T>, labels: Labels, create: () => T): T {
    const key = labelKey(bounded(series, labels));
    let entry = series.get(key);
    if (entry === undefined) {
      entry = create();
      series.set(key, entry);
    }
    return entry;
  }

  /** Adds an observer of queries and LLM calls; returns the function that removes it. */
  observe(observer: MetricsObserver): () => void {
    this.#observers = [...this.#observers, observer];
    return () => {
      this.#observers = this.#observers.filter((kept) => kept !== observer);
    };
  }

  /** Counts one answered query; `reason` is the failure's fixed text (never peer data), for observers. */
  query(path: QueryPath, label: string, reason?: string): void {
    const cells = this.#cellsOf(label);
    (cells.queries[path] ??= this.#entry(this.#queries, { path, protocol: cells.protocol }, () => ({
      value: 0,
    }))).value += 1;
    this.#totals.queries[path] += 1;
    for (const observer of this.#observers) observer.query?.(path, cells.protocol, reason);
  }

  /** Counts one LLM call and its tokens. */
  llmCall(protocol: string, purpose: string, inputTokens: number, outputTokens: number): void {
    const labels = bounded(this.#llmCalls, { protocol: capLabel(protocol), purpose: capLabel(purpose) });
    const key = labelKey(labels);
    this.#llmCalls.set(key, (this.#llmCalls.get(key) ?? 0) + 1);
    for (const [direction, count] of [
      ['input', inputTokens],
      ['output', outputTokens],
    ] as const) {
      // Keyed like the call count, so the token series stay bounded with it.
      const tokenKey = labelKey({ ...labels, direction });
      this.#tokens.set(tokenKey, (this.#tokens.get(tokenKey) ?? 0) + count);
    }
    this.#totals.llmCalls += 1;
    this.#totals.inputTokens += inputTokens;
    this.#totals.outputTokens += outputTokens;
    for (const observer of this.#observers)
      observer.llmCall?.(labels.protocol!, labels.purpose!, inputTokens, outputTokens);
  }

  /** Records how long a routine ran. */
  routineLatency(label: string, seconds: number): void {
    const cells = this.#cellsOf(label);
    const histogram = (cells.latency ??= this.#entry(this.#latency, { protocol: cells.protocol }, () => ({
      buckets: LATENCY_BUCKETS.map(() => 0),
      sum: 0,
      count: 0,
    })));
    // One count, in the first bucket that holds the value (none past the last bound: only +Inf, the count, has it);
    // rendering sums them into Prometheus' cumulative buckets. Counting into every bucket above cost 14 writes a query.
    let index = 0;
    while (index < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[index]!) index++;
    if (index < LATENCY_BUCKETS.length) histogram.buckets[index]! += 1;
    histogram.sum += seconds;
    histogram.count += 1;
  }

  /** Counts one stream begun. */
  stream(kind: StreamKind): void {
    this.#streams[kind] += 1;
    this.#totals.streams += 1;
  }

  /** Counts one piece of a streamed reply. */
  streamDelta(): void {
    this.#totals.deltas += 1;
  }

  /** Counts one turn aborted because its streaming client went away (its LLM call closed). */
  llmAborted(): void {
    this.#totals.abortedCalls += 1;
  }

  /** The totals so far. */
  snapshot(): MetricsSnapshot {
    return structuredClone(this.#totals);
  }

  /** One line for `agora serve` to print on exit. */
  summary(): string {
    const { queries, llmCalls, inputTokens, outputTokens } = this.#totals;
    const total = queries.routine + queries.llm + queries.failure;
    return `${plural(total, 'query', 'queries')} (${queries.routine} routine, ${queries.llm} LLM, ${queries.failure} failed); ${plural(llmCalls, 'LLM call')}, ${inputTokens} input + ${plural(outputTokens, 'output token')}`;
  }

  /** Prometheus text exposition format. */
  render(): string {
    const lines: string[] = [];
    const counter = (name: string, help: string, values: Map<string, number | Cell>) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`);
      for (const [labels, value] of values)
        lines.push(`${name}{${labels}} ${typeof value === 'number' ? value : value.value}`);
    };
    counter('agora_queries_total', 'Queries answered, by path (routine, llm, failure) and protocol.', this.#queries);
    counter('agora_llm_calls_total', 'LLM calls, by protocol and purpose.', this.#llmCalls);
    counter('agora_llm_tokens_total', 'LLM tokens, by protocol, purpose and direction (input, output).', this.#tokens);
    lines.push(
      '# HELP agora_streams_total Streamed replies and resumptions, by kind.',
      '# TYPE agora_streams_total counter',
    );
    for (const [kind, value] of Object.entries(this.#streams))
      lines.push(`agora_streams_total{kind="${kind}"} ${value}`);
    lines.push(
      '# HELP agora_stream_deltas_total Pieces of replies streamed.',
      '# TYPE agora_stream_deltas_total counter',
      `agora_stream_deltas_total ${this.#totals.deltas}`,
    );
    lines.push(
      '# HELP agora_stream_aborted_total Turns aborted because their streaming client went away.',
      '# TYPE agora_stream_aborted_total counter',
      `agora_stream_aborted_total ${this.#totals.abortedCalls}`,
    );
    lines.push(
      '# HELP agora_routine_duration_seconds Routine run time.',
      '# TYPE agora_routine_duration_seconds histogram',
    );
    for (const [labels, histogram] of this.#latency) {
      let cumulative = 0;
      LATENCY_BUCKETS.forEach((bound, index) => {
        cumulative += histogram.buckets[index]!;
        lines.push(`agora_routine_duration_seconds_bucket{${labels},le="${bound}"} ${cumulative}`);
      });
      lines.push(`agora_routine_duration_seconds_bucket{${labels},le="+Inf"} ${histogram.count}`);
      lines.push(`agora_routine_duration_seconds_sum{${labels}} ${histogram.sum}`);
      lines.push(`agora_routine_duration_seconds_count{${labels}} ${histogram.count}`);
    }
    return `${lines.join('\n')}\n`;
  }
}
