// Internal: what a failure of the CLI says to do next, one line after its cause, and the nearest name to a mistyped
// command or flag.

/**
 * The next step for a common failure, from its message (`undefined` when there is none to add): which flag or
 * variable carries a token, which flag picks another port, what to start when nothing answers.
 */
export function nextStep(message: string, command: string, flags: readonly string[]): string | undefined {
  if (/\bHTTP 401\b|Unauthorized/.test(message)) {
    const hints = [];
    if (flags.includes('token') || !flags.includes('hub-token'))
      hints.push('for an agent pass --token <token> or set AGORA_TOKEN');
    if (flags.includes('hub-token')) hints.push('for a hub pass --hub-token <token> or set AGORA_HUB_TOKEN');
    return `a token is required: ${hints.join('; ')}`;
  }
  if (/EADDRINUSE/.test(message))
    return 'the port is taken (another agent?): pick another with --port <n>, or --port 0 for any free one';
  // A store that does not answer names itself (`Redis unreachable at …`): no agent to start there.
  if (/^Redis unreachable/.test(message)) return undefined;
  const refused = /^(?:GET|POST|PUT|DELETE) (\S+?): connection refused/.exec(message);
  if (refused || /ECONNREFUSED|connection refused/.test(message)) {
    const origin = refused ? originOf(refused[1]!) : 'that address';
    return `is an agent running at ${origin}? Start one with \`agora serve\``;
  }
  if (command === 'negotiate' && /Unsupported protocol/.test(message))
    return 'the agent answers only its own protocols (it has no LLM to negotiate with): see `agora wellknown <url>`';
  return undefined;
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/**
 * The candidate nearest to a mistyped name, when near enough: the Damerau-Levenshtein distance with the rule
 * commander.js uses for its "Did you mean" (at most 40% of the name's letters different, the smallest distance wins).
 */
export function didYouMean(typed: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    if (candidate.length <= 1) continue;
    const distance = editDistance(typed, candidate);
    const length = Math.max(typed.length, candidate.length);
    if ((length - distance) / length > 0.4 && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** Edits (insert, delete, replace, swap of neighbours) from one string to another. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 0; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        value = Math.min(value, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = value;
    }
  }
  return rows[a.length]![b.length]!;
}
