// Where a run's cost goes: its last actions by path (an action that wrote a routine counted apart, as it pays for the
// routine) and by kind of prompt, each with its share of the dollars. Markdown tables, from the run's own records.
import type { Sums } from './llm.js';
import type { Outcome, Path } from './network.js';

/** The rows of the breakdown by path: the four paths, and the actions that wrote a routine. */
export type Bucket = Path | 'wrote a routine';
const BUCKETS: Bucket[] = [
  'natural language',
  'negotiation',
  'protocol with LLM',
  'protocol with routines',
  'wrote a routine',
];

/** Which side sends each kind of prompt: the user (the sender) or the service (the receiver). */
const SIDE: Record<string, 'user' | 'service'> = {
  naturalLanguageQuery: 'user',
  readReply: 'user',
  protocolBody: 'user',
  judgeFit: 'user',
  proposeProtocol: 'user',
  writeTaskRoutine: 'user',
  answerNaturalLanguage: 'service',
  answerUnderProtocol: 'service',
  suitability: 'service',
  answerNegotiation: 'service',
  writeRoutine: 'service',
  writeCheckQueries: 'service',
};

const row = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
const usd = (value: number) => `$${value.toFixed(4)}`;
const share = (part: number, whole: number) => (whole > 0 ? `${((100 * part) / whole).toFixed(1)}%` : '—');
const add = (into: Sums, from: Sums) => {
  into.calls += from.calls;
  into.input += from.input;
  into.output += from.output;
  into.dollars += from.dollars;
};
const zero = (): Sums => ({ calls: 0, input: 0, output: 0, dollars: 0 });

/** The bucket of an action: the routine it wrote, else its path. */
export function bucketOf(outcome: Outcome): Bucket {
  return outcome.wroteRoutine ? 'wrote a routine' : outcome.path;
}

/** The breakdown of the last `tail` outcomes, by path and by kind of prompt, as two markdown tables. */
export function costBreakdown(outcomes: Outcome[], tail: number): string {
  const last = outcomes.slice(-tail);
  const total = last.reduce((sum, outcome) => sum + outcome.dollars, 0);
  const paths = BUCKETS.map((bucket) => {
    const mine = last.filter((outcome) => bucketOf(outcome) === bucket);
    const sums = zero();
    for (const outcome of mine) add(sums, outcome);
    return row([
      bucket,
      mine.length,
      sums.calls,
      (sums.input + sums.output).toLocaleString('en-US'),
      usd(sums.dollars),
      mine.length ? usd(sums.dollars / mine.length) : '—',
      share(sums.dollars, total),
    ]);
  });
  const kinds = new Map<string, Sums>();
  for (const outcome of last)
    for (const [kind, sums] of Object.entries(outcome.kinds)) {
      const entry = kinds.get(kind) ?? zero();
      add(entry, sums);
      kinds.set(kind, entry);
    }
  const byKind = [...kinds]
    .sort((a, b) => b[1].dollars - a[1].dollars)
    .map(([kind, sums]) =>
      row([
        kind,
        SIDE[kind] ?? '?',
        sums.calls,
        Math.round(sums.input / sums.calls).toLocaleString('en-US'),
        Math.round(sums.output / sums.calls).toLocaleString('en-US'),
        usd(sums.dollars),
        share(sums.dollars, total),
      ]),
    );
  return [
    `Where the Agora run's last ${last.length} actions spent (${usd(total)}, ${usd(total / Math.max(1, last.length))} per query):`,
    '',
    row(['path', 'actions', 'LLM calls', 'tokens', 'dollars', 'per action', 'share']),
    row(Array(7).fill('---')),
    ...paths,
    '',
    row(['prompt', 'side', 'calls', 'input tokens per call', 'output tokens per call', 'dollars', 'share']),
    row(Array(7).fill('---')),
    ...byKind,
  ].join('\n');
}
