// The hub's word index: an inverted index of words → entries, scored by idf × field weight. Searches and
// routing cost what the goal's words have postings, not what the directory holds.

/** Words too common to say anything about a capability. */
const STOP_WORDS = new Set(
  'a an and are as at be by can do does for from get give has have how i in into is it its me my of on or our please that the this to up us we what when where which who will with you your agent agents'.split(' '),
);

const MAX_WORD_LENGTH = 40;

/** Lower-cases, splits on anything but letters and digits, drops stop words and a plural `s`; duplicates kept. */
export function words(text: string): string[] {
  const result: string[] = [];
  for (const raw of text.toLowerCase().normalize('NFKD').split(/[^\p{L}\p{N}]+/u)) {
    if (raw.length < 2 || raw.length > MAX_WORD_LENGTH || STOP_WORDS.has(raw)) continue;
    // A light stem, so "forecasts" finds "forecast"; "ss" ("class") and short words are left alone.
    result.push(raw.length > 3 && raw.endsWith('s') && !raw.endsWith('ss') ? raw.slice(0, -1) : raw);
  }
  return result;
}

/** Why an entry matched: each goal word with the field it was found in. */
export type Match = { word: string; field: string };

/** One scored result of {@link KeywordIndex.search}. */
export type Scored = { id: string; score: number; matches: Match[] };

type Posting = { id: string; weight: number; field: string };

/** Options of {@link KeywordIndex}. */
export type KeywordIndexOptions = {
  /**
   * A word held by more entries than this is only scanned when no rarer word of the query matched: it says
   * little (its idf is low) and scanning it would cost in proportion to the directory (default 1000).
   */
  maxPostings?: number;
};

/**
 * An inverted index of words → entries with a weight per field (a name counts more than a description).
 * @example const index = new KeywordIndex(); index.set('a1', [{ field: 'name', text: 'Weather', weight: 3 }]); index.search('weather in Paris');
 */
export class KeywordIndex {
  readonly #postings = new Map<string, Posting[]>();
  readonly #wordsOf = new Map<string, string[]>();
  readonly #maxPostings: number;

  constructor(options: KeywordIndexOptions = {}) {
    this.#maxPostings = options.maxPostings ?? 1000;
  }

  /** Entries indexed. */
  get size(): number {
    return this.#wordsOf.size;
  }

  /** Indexes (or re-indexes) an entry from its fields. */
  set(id: string, fields: readonly { field: string; text: string; weight: number }[]): void {
    this.delete(id);
    const best = new Map<string, Posting>();
    for (const { field, text, weight } of fields) {
      for (const word of words(text)) {
        const current = best.get(word);
        if (current === undefined) best.set(word, { id, weight, field });
        else if (weight > current.weight) best.set(word, { id, weight, field });
        // Repetition within an entry adds a little, never as much as another field would.
        else current.weight += weight * 0.1;
      }
    }
    for (const [word, posting] of best) {
      let list = this.#postings.get(word);
      if (list === undefined) this.#postings.set(word, (list = []));
      list.push(posting);
    }
    this.#wordsOf.set(id, [...best.keys()]);
  }

  /** Removes an entry. */
  delete(id: string): void {
    const indexed = this.#wordsOf.get(id);
    if (indexed === undefined) return;
    this.#wordsOf.delete(id);
    for (const word of indexed) {
      const list = this.#postings.get(word);
      if (list === undefined) continue;
      const at = list.findIndex((posting) => posting.id === id);
      if (at !== -1) {
        // Order does not matter: swap with the last, so a delete is O(1) after the find.
        list[at] = list[list.length - 1]!;
        list.pop();
      }
      if (list.length === 0) this.#postings.delete(word);
    }
  }

  /** Removes every entry. */
  clear(): void {
    this.#postings.clear();
    this.#wordsOf.clear();
  }

  /** Entries matching any word of `query`, best first (ties by id, so results are stable); `accept` filters. */
  search(query: string, limit = 20, accept?: (id: string) => boolean): Scored[] {
    const total = Math.max(1, this.#wordsOf.size);
    const unique = [...new Set(words(query))];
    const lists = unique.map((word) => ({ word, list: this.#postings.get(word) })).filter((entry): entry is { word: string; list: Posting[] } => entry.list !== undefined);
    // Rare words first; common ones only when nothing rarer matched (see maxPostings).
    lists.sort((a, b) => a.list.length - b.list.length);
    const scores = new Map<string, Scored>();
    for (const { word, list } of lists) {
      if (list.length > this.#maxPostings && scores.size > 0) continue;
      const idf = Math.log(1 + total / list.length);
      for (const posting of list) {
        if (accept !== undefined && !accept(posting.id)) continue;
        let entry = scores.get(posting.id);
        if (entry === undefined) scores.set(posting.id, (entry = { id: posting.id, score: 0, matches: [] }));
        entry.score += idf * posting.weight;
        entry.matches.push({ word, field: posting.field });
      }
    }
    return [...scores.values()].sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, limit);
  }
}
