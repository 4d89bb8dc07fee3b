// The hub dashboard's Cost panel: from the usage reports the hub keeps (hub/usage.ts), each series' cost per query
// as a moving average, and the last window's queries and cost by path. Numbers only, as the reports are.
import { USAGE_PATHS, type UsageEntry, type UsageLog } from '../hub/usage.js';

/** The Cost panel's moving average, in queries, unless the dashboard is given another. */
export const DEFAULT_COST_WINDOW = 100;

type PathSums = { queries: number; calls: number; tokens: number; cost: number };

/** One series as the Cost panel draws it. */
export type UsageSeriesView = {
  name: string;
  /** Queries ever reported in it. */
  total: number;
  /** The query number of the first point (earlier ones left the hub's ring buffer). */
  first: number;
  /** Cost per query, moving average over `window` queries (over fewer at the start). */
  average: number[];
  /** The last `window` queries by path (`unknown` when the report named none). */
  byPath: Record<string, PathSums>;
};

/** What the Cost panel shows: whether the hub takes reports, the unit (dollars when every report has them), series. */
export type UsageView = {
  enabled: boolean;
  window: number;
  unit: 'dollars' | 'tokens';
  series: UsageSeriesView[];
};

/** The Cost panel's data, from the hub's usage log. */
export function usageView(log: UsageLog, window = DEFAULT_COST_WINDOW): UsageView {
  const series = log.series();
  const dollars = series.every((one) => one.entries.every((entry) => entry.dollars !== undefined));
  const costOf = (entry: UsageEntry) => (dollars ? entry.dollars! : entry.inputTokens + entry.outputTokens);
  return {
    enabled: log.enabled,
    window,
    unit: dollars ? 'dollars' : 'tokens',
    series: series.map(({ name, total, entries }) => {
      const costs = entries.map(costOf);
      // Each window summed afresh (at most 1000 × window additions): a running sum would drift below zero.
      const average = costs.map((_, index) => {
        const from = Math.max(0, index + 1 - window);
        let sum = 0;
        for (let at = from; at <= index; at++) sum += costs[at]!;
        return sum / (index + 1 - from);
      });
      const byPath: Record<string, PathSums> = {};
      for (const entry of entries.slice(-window)) {
        const path = entry.path && USAGE_PATHS.includes(entry.path) ? entry.path : 'unknown';
        const sums = (byPath[path] ??= { queries: 0, calls: 0, tokens: 0, cost: 0 });
        sums.queries += 1;
        sums.calls += entry.calls;
        sums.tokens += entry.inputTokens + entry.outputTokens;
        sums.cost += costOf(entry);
      }
      return { name, total, first: entries[0]?.query ?? 1, average, byPath };
    }),
  };
}
