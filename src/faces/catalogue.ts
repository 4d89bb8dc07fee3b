// What the agent serves, as every face advertises it: one entry per protocol `/wellknown` lists, read once for all
// the faces of an agent. Each face derives its own view from it (ROAR's card, A2A's skills, OAP's capability words,
// MCP's tools).
import { parseDocument } from '../protocol/document.js';
import type { ReceiverApi } from '../receiver.js';

/** A served protocol: its hex hash, what its document's metadata says, and the document's text (its contract). */
export type CatalogueEntry = { hash: string; name: string; description: string; multiround: boolean; content: string };

/**
 * The served protocols, read through `ReceiverApi` (`wellknown` then `document`); documents are content-addressed,
 * so each is parsed once and kept while it is listed. One per agent, shared by its faces.
 * @example const protocols = await new Catalogue(receiver).entries();
 */
export class Catalogue {
  readonly #receiver: Pick<ReceiverApi, 'wellknown' | 'document'>;
  readonly #parsed = new Map<string, CatalogueEntry | null>();

  constructor(receiver: Pick<ReceiverApi, 'wellknown' | 'document'>) {
    this.#receiver = receiver;
  }

  /** Every served protocol whose document parses, in the listing's order. */
  async entries(): Promise<CatalogueEntry[]> {
    const listing = await this.#receiver.wellknown();
    const entries: CatalogueEntry[] = [];
    for (const hash of Object.keys(listing)) {
      let entry = this.#parsed.get(hash);
      if (entry === undefined) {
        entry = await this.#read(hash);
        this.#parsed.set(hash, entry);
      }
      if (entry) entries.push(entry);
    }
    // Forget documents no longer listed, so the cache stays the size of the listing.
    for (const hash of this.#parsed.keys()) if (!(hash in listing)) this.#parsed.delete(hash);
    return entries;
  }

  async #read(hash: string): Promise<CatalogueEntry | null> {
    const text = await this.#receiver.document(hash);
    try {
      const document = text === undefined ? undefined : parseDocument(text);
      if (!document) return null;
      const { name, description, multiround } = document.metadata;
      return { hash, name, description, multiround, content: document.content };
    } catch {
      return null;
    }
  }
}

const STOP_WORDS = new Set('a an and the of to in on for or with by is it its one at as from into'.split(' '));

/** Lower-case words of the served protocols' names and descriptions (OAP's keyword routing reads them). */
export function capabilityWords(entries: readonly CatalogueEntry[], max = 64): string[] {
  const words = new Set<string>();
  for (const entry of entries) {
    for (const word of `${entry.name} ${entry.description}`.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
      if (word.length > 1 && !STOP_WORDS.has(word)) words.add(word);
      if (words.size >= max) return [...words];
    }
  }
  return [...words];
}
