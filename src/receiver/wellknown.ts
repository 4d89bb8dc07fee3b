// What `/wellknown` lists (spec §4): every document the receiver can answer, with the sources a peer fetches it from.
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { KnownDocument, ProtocolRegistry } from '../protocol/registry.js';
import type { Wellknown } from '../schemas.js';
import type { AgentFolder } from './folder.js';
import type { Suitability } from './suitability.js';
import type { ReceiverExtensions, RequestContext } from './types.js';

// `/wellknown` reads what other processes sharing the memory learned at most this often.
const SHARED_READ_INTERVAL_MS = 1000;

/** The parts of a receiver its listing reads. */
export type WellknownParts = {
  registry: ProtocolRegistry;
  folder: AgentFolder;
  suitability: Suitability;
  extensions: ReceiverExtensions;
  hasLlm: boolean;
  logger: Logger;
  now: () => number;
  /** The public base URL the sources are built from (else the request's). */
  publicUrl: string | undefined;
};

/** The receiver's `/wellknown`: the documents it can answer (a routine, an extension routine, or the LLM), local and learned. */
export class WellknownListing {
  readonly #parts: WellknownParts;
  /** When the listing last read what other processes learned (the injected clock's ms). */
  #sharedReadAt: number | undefined;

  constructor(parts: WellknownParts) {
    this.#parts = parts;
  }

  /** The listing: hash → sources, our own `/protocols/<hash>` first. */
  async list(context?: RequestContext): Promise<Wellknown> {
    const { registry, suitability, logger, now, publicUrl } = this.#parts;
    // What other processes sharing the memory learned and judged is listed here too (at most one look a second).
    const time = now();
    if (this.#sharedReadAt === undefined || time - this.#sharedReadAt >= SHARED_READ_INTERVAL_MS) {
      this.#sharedReadAt = time;
      await Promise.all([registry.refreshLearned(), suitability.load()]).catch((error: unknown) => {
        logger.warn(`/wellknown: could not read what other processes learned: ${describeError(error)}`);
      });
    }
    const base = (publicUrl ?? context?.baseUrl ?? '').replace(/\/+$/, '');
    const listing: Wellknown = {};
    const candidates: KnownDocument[] = [
      ...registry.local().map(({ name, document }) => ({ document, origin: 'local' as const, name })),
      ...registry.learned().map((document) => ({ document, origin: 'learned' as const })),
    ];
    for (const known of candidates) {
      if (!(await this.#canAnswer(known))) continue;
      const sources: string[] = [];
      if (base) sources.push(`${base}/protocols/${known.document.hash}`);
      const extra = known.document.metadata.sources;
      if (Array.isArray(extra)) for (const source of extra) if (typeof source === 'string' && !sources.includes(source)) sources.push(source);
      if (!sources.length) sources.push(`/protocols/${known.document.hash}`);
      listing[known.document.hash] = sources;
    }
    return listing;
  }

  /** Whether the receiver can answer a document: a routine, an extension routine, or the LLM (with a verdict for learned PDs). */
  async #canAnswer(known: KnownDocument): Promise<boolean> {
    const { folder, extensions, suitability, hasLlm } = this.#parts;
    if (folder.routineFor(known)) return true;
    if (known.origin === 'local') return hasLlm || (await extensions.routineFor?.(known.document.hash, known.document)) !== undefined;
    const verdict = suitability.known(known.document.hash);
    if (verdict === false) return false;
    if ((await extensions.routineFor?.(known.document.hash, known.document)) !== undefined) return true;
    return verdict === true && hasLlm;
  }
}
