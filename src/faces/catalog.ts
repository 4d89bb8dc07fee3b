// What the agent serves, as the faces advertise it: one entry per protocol `/wellknown` lists.
import { parseDocument } from '../protocol/document.js';
import type { ReceiverApi } from '../receiver.js';

/** A served protocol: its hex hash and what its document's metadata says. */
export type CatalogEntry = { hash: string; name: string; description: string; multiround: boolean };

/**
 * Reads the served protocols through `ReceiverApi` (`wellknown` then `document`); documents are
 * content-addressed, so each is parsed once and kept while it is listed.
 */
export function createCatalog(receiver: ReceiverApi): () => Promise<CatalogEntry[]> {
  const parsed = new Map<string, CatalogEntry | null>();
  return async () => {
    const listing = await receiver.wellknown();
    const entries: CatalogEntry[] = [];
    for (const hash of Object.keys(listing)) {
      let entry = parsed.get(hash);
      if (entry === undefined) {
        const text = await receiver.document(hash);
        try {
          const document = text === undefined ? undefined : parseDocument(text);
          entry = document
            ? {
                hash,
                name: document.metadata.name,
                description: document.metadata.description,
                multiround: document.metadata.multiround,
              }
            : null;
        } catch {
          entry = null;
        }
        parsed.set(hash, entry);
      }
      if (entry) entries.push(entry);
    }
    // Forget documents no longer listed, so the cache stays the size of the listing.
    for (const hash of parsed.keys()) if (!(hash in listing)) parsed.delete(hash);
    return entries;
  };
}

/** Lower-case words of the served protocols' names and descriptions (OAP's keyword routing reads them). */
export function capabilityWords(entries: readonly CatalogEntry[], max = 64): string[] {
  const stop = new Set([
    'a',
    'an',
    'and',
    'the',
    'of',
    'to',
    'in',
    'on',
    'for',
    'or',
    'with',
    'by',
    'is',
    'it',
    'its',
    'one',
    'at',
    'as',
    'from',
    'into',
  ]);
  const words = new Set<string>();
  for (const entry of entries) {
    for (const word of `${entry.name} ${entry.description}`.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
      if (word.length > 1 && !stop.has(word)) words.add(word);
      if (words.size >= max) return [...words];
    }
  }
  return [...words];
}
