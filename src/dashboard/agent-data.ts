// The agent dashboard's data, as JSON: read from what the agent already keeps (registry, counters, the
// conversation store, the generation book in memory) and from the recorder. Nothing here runs per query.
import { readFile } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import {
  listGeneratedRoutines,
  reviewGeneratedRoutine,
  type GeneratedRoutineEntry,
} from '../generation/lifecycle/review.js';
import type { CheckCase } from '../generation/checks/checks.js';
import { NATURAL_LANGUAGE, type MetricsSnapshot } from '../metrics.js';
import type { ProtocolDocument } from '../protocol/document.js';
import type { Receiver } from '../receiver.js';
import type { CostBucket, DashboardRecorder, FailureRecord, ProtocolTotals, RateBucket } from './recorder.js';
import type { McpServerStatus } from '../tool/mcp/index.js';

/** How a protocol is answered now. */
export type AnsweredBy = 'routine' | 'generated routine' | 'LLM' | 'not served';

/** One row of the Protocols panel. */
export type ProtocolRow = {
  name: string;
  hash: string;
  /** `folder` (protocols/, negotiated ones included) or `peer` (learned from a peer's sources). */
  origin: 'folder' | 'peer';
  file?: string;
  answeredBy: AnsweredBy;
  /** Why not served, or what is pending (a routine awaiting approval). */
  note?: string;
  queries: { routine: number; llm: number; failure: number };
  lastUsedAt: number | null;
};

/** A page of the Protocols panel: its rows, where it starts, and how many protocols there are in all. */
export type ProtocolPage = { total: number; offset: number; limit: number; rows: ProtocolRow[] };

/** Rows of a page of protocols when the request does not say, and at most. */
export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;

/** One routine the LLM wrote, with its code and the checks it passed. */
export type RoutineRow = {
  id: string;
  kind: 'protocol' | 'task';
  protocol: string;
  task?: string;
  hash: string;
  status: GeneratedRoutineEntry['status'];
  reason?: string;
  uses: GeneratedRoutineEntry['counters'];
  file?: string;
  code?: string;
  model?: string;
  createdAt?: string;
  reviewedAt?: string;
  checks: string[];
  cases: CheckCase[];
  errors: string[];
};

// A generated file larger than this is shown cut: the page is for reading, the file stays on disk.
const MAX_CODE_CHARS = 64 * 1024;

/** The agent dashboard's data source: one per receiver. */
export class AgentData {
  constructor(
    private readonly receiver: Receiver,
    private readonly recorder: DashboardRecorder,
    /** Called after a review, so the agent's cached statuses are read again (the generator's `forgetStatuses`). */
    private readonly onReviewed: () => void = () => {},
  ) {}

  /** Name, LLM, start time and totals since start. */
  overview(): {
    name: string;
    llm: string | null;
    startedAt: number;
    totals: MetricsSnapshot;
    mcpServers: McpServerStatus[];
  } {
    return {
      name: this.receiver.name,
      llm: this.receiver.llm?.model ?? null,
      startedAt: this.recorder.startedAt,
      totals: this.receiver.counters.snapshot(),
      mcpServers: this.receiver.mcpServers(),
    };
  }

  /**
   * A page of the protocols the agent holds (its folder's by name, then those learned from peers), with how each is
   * answered and its use, and how many there are: a page costs its rows, whatever the number held.
   */
  async protocols(offset = 0, limit = DEFAULT_PAGE): Promise<ProtocolPage> {
    // Its totals are those of the whole folder: while protocols/ is first read, the page waits for it.
    if (this.receiver.loading()) await this.receiver.loaded();
    const local = this.receiver.registry.local();
    const learned = this.receiver.registry.learned();
    const total = local.length + learned.length;
    const start = Math.max(0, Math.min(offset, total));
    const end = Math.min(total, start + Math.max(1, Math.min(limit, MAX_PAGE)));
    const [listed, generated] = await Promise.all([this.receiver.wellknown(), this.#generatedByHash()]);
    const totals = this.recorder.totals();
    const rows: ProtocolRow[] = [];
    const add = (
      document: ProtocolDocument,
      origin: ProtocolRow['origin'],
      file: string | undefined,
      routine: boolean,
    ) => {
      const name = document.metadata.name;
      const used: ProtocolTotals | undefined = totals[name];
      const status = generated.get(document.hash)?.status;
      let answeredBy: AnsweredBy = routine
        ? 'routine'
        : status === 'approved'
          ? 'generated routine'
          : this.receiver.llm
            ? 'LLM'
            : 'not served';
      let note: string | undefined;
      if (!(document.hash in listed)) {
        answeredBy = 'not served';
        note = origin === 'folder' ? 'no routine in routines/ and no LLM' : 'no routine, and no LLM judged it suitable';
      } else if (answeredBy === 'LLM' && status === 'pending') note = 'a routine awaits approval';
      else if (answeredBy === 'LLM' && status === 'disabled') note = 'its routine was disabled after failures';
      rows.push({
        name,
        hash: document.hash,
        origin,
        ...(file ? { file } : {}),
        answeredBy,
        ...(note ? { note } : {}),
        queries: { routine: used?.routine ?? 0, llm: used?.llm ?? 0, failure: used?.failure ?? 0 },
        lastUsedAt: used?.lastUsedAt ?? null,
      });
    };
    for (let index = start; index < end; index += 1) {
      if (index < local.length) {
        const { name, document } = local[index]!;
        add(
          document,
          'folder',
          `protocols/${name}.md`,
          this.receiver.routineFor({ document, origin: 'local', name }) !== undefined,
        );
      } else {
        const document = learned[index - local.length]!;
        add(document, 'peer', undefined, this.receiver.routineFor({ document, origin: 'learned' }) !== undefined);
      }
    }
    return { total, offset: start, limit: end - start, rows };
  }

  /** A protocol's text, or undefined when the agent does not hold it. */
  async protocolText(hash: string): Promise<string | undefined> {
    return /^[0-9a-f]{40}$/.test(hash) ? this.receiver.document(hash) : undefined;
  }

  /**
   * Conversations open now (per protocol when the store can tell), the last two minutes' rates, the latest failures.
   */
  async live(): Promise<{
    open: number;
    openByProtocol: { name: string; hash: string | null; count: number }[] | null;
    rates: RateBucket[];
    failures: FailureRecord[];
  }> {
    const store = this.receiver.store;
    const [open, byHash] = await Promise.all([store.count(), store.countByProtocol?.()]);
    const openByProtocol = byHash
      ? [...byHash].map(([hash, count]) => ({
          name:
            hash === null
              ? NATURAL_LANGUAGE
              : (this.receiver.registry.get(hash)?.document.metadata.name ?? hash.slice(0, 8)),
          hash,
          count,
        }))
      : null;
    return { open, openByProtocol, rates: this.recorder.rates(), failures: this.recorder.failures() };
  }

  /** Cost buckets over time and the totals since start. */
  cost(): {
    bucketMs: number;
    buckets: CostBucket[];
    totals: MetricsSnapshot;
    protocols: Record<string, ProtocolTotals>;
  } {
    return {
      bucketMs: this.recorder.costBucketMs,
      buckets: this.recorder.costs(),
      totals: this.receiver.counters.snapshot(),
      protocols: this.recorder.totals(),
    };
  }

  /** The routines the LLM wrote (and protocols counted for one), with their code and checks. */
  async routines(): Promise<RoutineRow[]> {
    const entries = await listGeneratedRoutines(this.receiver.memory);
    return Promise.all(entries.filter((entry) => entry.status !== 'none').map((entry) => this.#row(entry)));
  }

  /** Approves or rejects a routine, as `agora routines approve|reject` does; the agent uses the decision at once. */
  async review(id: string, decision: 'approve' | 'reject'): Promise<RoutineRow> {
    const entry = await reviewGeneratedRoutine({
      dir: this.receiver.dir,
      memory: this.receiver.memory,
      reference: id,
      decision,
    });
    this.onReviewed();
    return this.#row(entry);
  }

  async #generatedByHash(): Promise<Map<string, GeneratedRoutineEntry>> {
    const entries = await listGeneratedRoutines(this.receiver.memory);
    return new Map(entries.filter((entry) => entry.kind === 'protocol').map((entry) => [entry.hash, entry]));
  }

  async #row(entry: GeneratedRoutineEntry): Promise<RoutineRow> {
    const record = entry.record;
    const code = record?.file ? await this.#code(record.file) : undefined;
    return {
      id: entry.id,
      kind: entry.kind,
      protocol: entry.protocol,
      ...(entry.task !== undefined ? { task: entry.task } : {}),
      hash: entry.hash,
      status: entry.status,
      ...(record?.reason ? { reason: record.reason } : {}),
      uses: entry.counters,
      ...(record?.file ? { file: record.file } : {}),
      ...(code !== undefined ? { code } : {}),
      ...(record?.model ? { model: record.model } : {}),
      ...(record?.createdAt ? { createdAt: record.createdAt } : {}),
      ...(record?.reviewedAt ? { reviewedAt: record.reviewedAt } : {}),
      checks: record?.checks ?? [],
      cases: record?.cases ?? [],
      errors: record?.errors ?? [],
    };
  }

  // Only files inside the agent folder: the path comes from memory, which another process may have written.
  async #code(file: string): Promise<string | undefined> {
    const path = resolve(this.receiver.dir, file);
    if (!path.startsWith(this.receiver.dir + sep)) return `// not shown: ${file} is outside the agent folder`;
    const text = await readFile(path, 'utf8').catch(() => undefined);
    return text !== undefined && text.length > MAX_CODE_CHARS
      ? `${text.slice(0, MAX_CODE_CHARS)}\n… (cut: the file is ${text.length} characters)`
      : text;
  }
}
