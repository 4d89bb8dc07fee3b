// What agents report of their LLM spending per query, kept by the hub so that its dashboard can draw the network's
// cost per query: numbers only (never a prompt, an answer or any other text of a peer's), in one ring buffer per
// series, at most `maxReports` per series and `MAX_SERIES` series (the least recently reported one makes room).
import { z } from 'zod';
import { readJson } from '../edge/body.js';
import type { Mount, MountedRequest, MountRoute } from '../edge/mount.js';
import { failure, json, type EdgeResponse } from '../edge/response.js';
import { AgoraError } from '../errors.js';

/** How a query was served, as the reporting agent saw it. */
export const USAGE_PATHS = ['natural-language', 'negotiation', 'protocol-llm', 'protocol-routine'] as const;

/** One query's spending as an agent reports it (`POST /usage`). */
export type UsageReport = {
  /** The curve it belongs to (a short slug; default `default`). */
  series?: string;
  path?: (typeof USAGE_PATHS)[number];
  /** LLM calls the query made, on both sides as far as the reporter knows. */
  calls: number;
  inputTokens: number;
  outputTokens: number;
  /** What those tokens cost, when the reporter knows its prices. */
  dollars?: number;
};

/** A report as the hub keeps it: stamped with the time it came and its query's number in its series (1-based). */
export type UsageEntry = Required<Omit<UsageReport, 'series' | 'dollars' | 'path'>> &
  Pick<UsageReport, 'dollars' | 'path'> & { at: number; query: number };

/** Series kept at most; a report for a new one beyond them drops the series reported to least recently. */
export const MAX_SERIES = 8;
/** Reports one `POST /usage` may carry. */
export const MAX_REPORTS_PER_REQUEST = 100;
/** The largest body `POST /usage` takes (a full batch of reports fits in it). */
export const USAGE_MAX_BODY_BYTES = 32 * 1024;

const count = (max: number) => z.number().int().min(0).max(max);
const reportSchema = z.strictObject({
  series: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,39}$/, 'a slug: lower-case letters, digits and dashes, at most 40')
    .optional(),
  path: z.enum(USAGE_PATHS).optional(),
  calls: count(10_000),
  inputTokens: count(100_000_000),
  outputTokens: count(100_000_000),
  dollars: z.number().min(0).max(1_000_000).optional(),
});
const bodySchema = z.union([
  reportSchema,
  z.strictObject({ reports: z.array(reportSchema).min(1).max(MAX_REPORTS_PER_REQUEST) }),
]);

/** The reports of a request body (one report, or `{ reports: [...] }`), checked; BAD_REQUEST naming what is wrong. */
export function parseUsageReports(body: unknown): UsageReport[] {
  const parsed = bodySchema.safeParse(body);
  if (!parsed.success) throw new AgoraError('BAD_REQUEST', `Invalid usage report: ${z.prettifyError(parsed.error)}`);
  return 'reports' in parsed.data ? parsed.data.reports : [parsed.data];
}

/** One series' ring buffer: the last `max` entries, and how many were ever added. */
class Ring {
  readonly #items: UsageEntry[] = [];
  #head = 0;
  total = 0;
  constructor(readonly max: number) {}

  push(entry: UsageEntry): void {
    this.total += 1;
    if (this.#items.length < this.max) this.#items.push(entry);
    else {
      this.#items[this.#head] = entry;
      this.#head = (this.#head + 1) % this.max;
    }
  }

  /** Oldest first. */
  entries(): UsageEntry[] {
    return [...this.#items.slice(this.#head), ...this.#items.slice(0, this.#head)];
  }
}

/** A series as read: its name, the reports ever added to it, and the kept ones, oldest first. */
export type UsageSeries = { name: string; total: number; entries: UsageEntry[] };

/** The hub's usage reports, in this process's memory: `maxReports` per series (0: reports are refused). */
export class UsageLog {
  readonly maxReports: number;
  readonly #series = new Map<string, Ring>();
  readonly #now: () => number;

  constructor(options: { maxReports: number; now?: () => number }) {
    if (!Number.isSafeInteger(options.maxReports) || options.maxReports < 0)
      throw new AgoraError(
        'INVALID_ARGUMENT',
        `Hub option maxUsageReports must be 0 or a positive integer, not ${options.maxReports}`,
      );
    this.maxReports = options.maxReports;
    this.#now = options.now ?? Date.now;
  }

  /** Whether this hub takes reports. */
  get enabled(): boolean {
    return this.maxReports > 0;
  }

  /** Keeps reports (checked by {@link parseUsageReports}); FORBIDDEN when the hub takes none. */
  add(reports: readonly UsageReport[]): void {
    if (!this.enabled) throw new AgoraError('NOT_FOUND', 'This hub keeps no usage reports (--usage-reports 0)');
    const at = this.#now();
    for (const { series: name = 'default', ...report } of reports) {
      let ring = this.#series.get(name);
      if (ring) this.#series.delete(name);
      else {
        ring = new Ring(this.maxReports);
        if (this.#series.size >= MAX_SERIES) this.#series.delete(this.#series.keys().next().value!);
      }
      // Re-inserted: the map's order is the order of the last report, the least recent first.
      this.#series.set(name, ring);
      ring.push({ ...report, at, query: ring.total + 1 });
    }
  }

  /** Every series, the one with the oldest kept report first. */
  series(): UsageSeries[] {
    return [...this.#series]
      .map(([name, ring]) => ({ name, total: ring.total, entries: ring.entries() }))
      .sort((a, b) => (a.entries[0]?.at ?? 0) - (b.entries[0]?.at ?? 0) || a.name.localeCompare(b.name));
  }
}

/**
 * `POST /usage` (one report, or `{ reports: [...] }`; a token with the admin scope when the hub has tokens) and
 * `GET /usage` (every series; a token when the hub has tokens), as a mount with its own small body cap.
 * @example startHub({ mounts: (hub) => [createHubDashboard(hub)] }) // startHub mounts usageMount(hub.usage) itself
 */
export function usageMount(log: UsageLog): Mount {
  const routes: MountRoute[] = [{ path: '/usage', access: 'admin', allow: 'GET, HEAD, POST, OPTIONS' }];
  async function handle(request: MountedRequest): Promise<EdgeResponse> {
    if (request.method === 'POST') {
      const reports = parseUsageReports(await readJson(request, z.unknown()));
      log.add(reports);
      return json(202, { status: 'success', kept: reports.length });
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      const response = failure(405, 'Method not allowed');
      response.headers.allow = 'GET, HEAD, POST';
      return response;
    }
    return json(200, { maxReports: log.maxReports, series: log.series() });
  }
  return { name: 'usage', routes, maxBodyBytes: USAGE_MAX_BODY_BYTES, handle, failure };
}
