// The hub's word index: an inverted index of words → entries, scored by idf × field weight. Each word's postings
// are kept best weight first (precomputed order), and a search reads at most a fixed number of them per word, then
// completes its candidates' scores from a forward index: a search costs what the query holds, not what the
// directory holds (bench/hub.ts measures 10,000 agents against 100).

/** Words too common to say anything about a capability. */
const STOP_WORDS = new Set(
  'a an and are as at be by can do does for from get give has have how i in into is it its me my of on or our please that the this to up us we what when where which who will with you your agent agents'.split(
    ' ',
  ),
);

const MAX_WORD_LENGTH = 40;

/** Lower-cases, splits on anything but letters and digits, drops stop words and a plural `s`; duplicates kept. */
export function words(text: string): string[] {
  const result: string[] = [];
  for (const raw of text
    .toLowerCase()
    .normalize('NFKD')
    .split(/[^\p{L}\p{N}]+/u)) {
    if (raw.length < 2 || raw.length > MAX_WORD_LENGTH || STOP_WORDS.has(raw)) continue;
    // A light stem, so "forecasts" finds "forecast" and "cities" "city"; "ss" ("class") and short words are left alone.
    if (raw.length > 4 && raw.endsWith('ies')) result.push(`${raw.slice(0, -3)}y`);
    else result.push(raw.length > 3 && raw.endsWith('s') && !raw.endsWith('ss') ? raw.slice(0, -1) : raw);
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
   * Postings read per query word, best weight first (default: 16, or the search's limit when larger). A word
   * held by more entries brings its best-weighted ones as candidates; every candidate's score still counts every
   * query word it holds.
   */
  scanPerWord?: number;
};

/** Query words looked up at most (a goal is capped in length anyway; this bounds the per-candidate bit mask). */
const MAX_QUERY_WORDS = 30;

/** Postings best first: weight descending, then id, so results are stable. */
function before(a: Posting, b: Posting): boolean {
  return a.weight > b.weight || (a.weight === b.weight && a.id < b.id);
}

/** One field of an entry: its text and how much a word found there counts. */
export type IndexedField = { field: string; text: string; weight: number };

/** An entry's postings by word: each word once, with the best field it is found in. */
function postingsOf(id: string, fields: readonly IndexedField[]): Map<string, Posting> {
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
  return best;
}

/**
 * An inverted index of words → entries with a weight per field (a name counts more than a description).
 * @example
 * const index = new KeywordIndex();
 * index.set('a1', [{ field: 'name', text: 'Weather', weight: 3 }]);
 * index.search('weather in Paris');
 */
export class KeywordIndex {
  readonly #postings = new Map<string, Posting[]>();
  /** id → its postings by word: deletes, and the scores of candidates found through another word. */
  readonly #forward = new Map<string, Map<string, Posting>>();
  readonly #scanPerWord: number;

  constructor(options: KeywordIndexOptions = {}) {
    this.#scanPerWord = options.scanPerWord ?? 16;
  }

  /** Entries indexed. */
  get size(): number {
    return this.#forward.size;
  }

  /** Indexes (or re-indexes) an entry from its fields: a binary insertion per word, whatever the index holds. */
  set(id: string, fields: readonly IndexedField[]): void {
    this.delete(id);
    const best = postingsOf(id, fields);
    for (const [word, posting] of best) {
      let list = this.#postings.get(word);
      if (list === undefined) this.#postings.set(word, (list = []));
      list.splice(this.#position(list, posting), 0, posting);
    }
    this.#forward.set(id, best);
  }

  /**
   * Indexes many entries at once (a process's first read of a directory): each word's postings sorted once, not
   * inserted one by one.
   */
  setMany(entries: Iterable<readonly [string, readonly IndexedField[]]>): void {
    const all = [...entries];
    // Deletes first: they binary-search lists that the additions below leave unsorted until the end.
    for (const [id] of all) this.delete(id);
    const touched = new Set<Posting[]>();
    for (const [id, fields] of all) {
      const best = postingsOf(id, fields);
      for (const [word, posting] of best) {
        let list = this.#postings.get(word);
        if (list === undefined) this.#postings.set(word, (list = []));
        list.push(posting);
        touched.add(list);
      }
      this.#forward.set(id, best);
    }
    for (const list of touched) list.sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
  }

  /** Where a posting goes (or is) in its list: binary search on (weight desc, id). */
  #position(list: readonly Posting[], posting: Posting): number {
    let low = 0;
    let high = list.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (before(list[middle]!, posting)) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** Removes an entry. */
  delete(id: string): void {
    const indexed = this.#forward.get(id);
    if (indexed === undefined) return;
    this.#forward.delete(id);
    for (const [word, posting] of indexed) {
      const list = this.#postings.get(word);
      if (list === undefined) continue;
      const at = this.#position(list, posting);
      if (list[at] === posting) list.splice(at, 1);
      if (list.length === 0) this.#postings.delete(word);
    }
  }

  /** Removes every entry. */
  clear(): void {
    this.#postings.clear();
    this.#forward.clear();
  }

  /**
   * Entries matching any word of `query`, best first (ties by id, so results are stable); `accept` filters. Each
   * word brings at most `scanPerWord` candidates (its best-weighted postings); each candidate is scored on all words.
   */
  search(query: string, limit = 20, accept?: (id: string) => boolean): Scored[] {
    const terms = this.#terms(query);
    if (terms.length === 0) return [];
    const budget = Math.max(this.#scanPerWord, limit);
    const candidates = new Set<string>();
    for (const { list } of terms) {
      const end = Math.min(list.length, budget);
      for (let index = 0; index < end; index++) {
        const id = list[index]!.id;
        if (!candidates.has(id) && (accept === undefined || accept(id))) candidates.add(id);
      }
    }
    return this.#rank(candidates, terms, limit);
  }

  /** Scores given entries (those serving a protocol, say) against `query`; entries matching no word are left out. */
  score(query: string, ids: Iterable<string>, limit = 20, accept?: (id: string) => boolean): Scored[] {
    const terms = this.#terms(query);
    const candidates = new Set<string>();
    for (const id of ids) if (this.#forward.has(id) && (accept === undefined || accept(id))) candidates.add(id);
    return this.#rank(candidates, terms, limit);
  }

  /** The query's distinct words that some entry holds, each with its idf. */
  #terms(query: string): { word: string; idf: number; list: Posting[] }[] {
    const total = Math.max(1, this.#forward.size);
    const terms: { word: string; idf: number; list: Posting[] }[] = [];
    for (const word of new Set(words(query))) {
      const list = this.#postings.get(word);
      if (list !== undefined) terms.push({ word, idf: Math.log(1 + total / list.length), list });
      if (terms.length >= MAX_QUERY_WORDS) break;
    }
    return terms;
  }

  /** The best `limit` candidates by full score (a bounded insertion into a sorted top list, no full sort). */
  #rank(candidates: ReadonlySet<string>, terms: readonly { word: string; idf: number }[], limit: number): Scored[] {
    const topIds: string[] = [];
    const topScores: number[] = [];
    for (const id of candidates) {
      const own = this.#forward.get(id);
      if (own === undefined) continue;
      let score = 0;
      for (const term of terms) {
        const posting = own.get(term.word);
        if (posting !== undefined) score += term.idf * posting.weight;
      }
      if (score === 0) continue;
      const full = topIds.length >= limit;
      if (full && (score < topScores[limit - 1]! || (score === topScores[limit - 1]! && id > topIds[limit - 1]!)))
        continue;
      let at = full ? limit - 1 : topIds.length;
      while (at > 0 && (topScores[at - 1]! < score || (topScores[at - 1] === score && topIds[at - 1]! > id))) {
        topScores[at] = topScores[at - 1]!;
        topIds[at] = topIds[at - 1]!;
        at -= 1;
      }
      topScores[at] = score;
      topIds[at] = id;
    }
    return topIds.map((id, index) => {
      const own = this.#forward.get(id)!;
      const matches: Match[] = [];
      for (const term of terms) {
        const posting = own.get(term.word);
        if (posting !== undefined) matches.push({ word: term.word, field: posting.field });
      }
      return { id, score: topScores[index]!, matches };
    });
  }
}
