// What `/wellknown` lists (spec §4): every document the receiver can answer, with the sources a peer fetches it from,
// built once per change (not per request) as its JSON bytes and a digest (the wire makes its ETag and encodings).
import { createHash } from 'node:crypto';
import { Slices } from '../_slices.js';
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ProtocolDocument } from '../protocol/document.js';
import type { KnownDocument } from '../protocol/registry.js';
import type { Wellknown } from '../schemas.js';
import type { TurnParts } from './parts.js';
import type { ListingBody, ReceiverExtensions, RequestContext } from './types.js';

// What other processes sharing the memory learned and judged (and what extensions answer for learned documents) is
// looked at again at most this often.
const SHARED_READ_INTERVAL_MS = 1000;
/** Entries joined and encoded at a time (about 120 KB). */
const BATCH = 1000;

/** The parts of a receiver its listing reads, and the public base URL of its sources (else the request's). */
export type WellknownParts = Pick<
  TurnParts,
  'registry' | 'folder' | 'suitability' | 'extensions' | 'llm' | 'logger' | 'now'
> & { publicUrl: string | undefined };

/**
 * A part of the listing: its JSON text without the braces, as the bytes of each slice (a 6 MB string made whole and
 * encoded at once held the loop ~100 ms here; slices are encoded as they are built, then copied together), and a
 * hash of that text.
 */
type Part = { key: string; chunks: Buffer[]; digest: string };

/** What is built for one base URL (the request's, when no public URL is set). */
type ForBase = {
  /** hash → its `"hash":[sources]` text, kept between builds: a change of one document rebuilds one entry. */
  pieces: Map<string, string>;
  local?: Part;
  localBuild?: { key: string; part: Promise<Part> };
  learned?: Part;
  ready?: Ready;
  /** The ready body being joined, for these parts. */
  readyBuild?: { local: Part; learned: Part; ready: Promise<Ready> };
};

type Ready = ListingBody & { local: Part; learned: Part };

/** The chunks as one buffer, copied a slice at a time (a 6 MB `Buffer.concat` held the loop ~12 ms). */
async function joinInSlices(chunks: readonly Buffer[]): Promise<Buffer> {
  let total = 0;
  for (const chunk of chunks) total += chunk.length;
  const joined = Buffer.allocUnsafe(total);
  const slices = new Slices();
  let offset = 0;
  for (const chunk of chunks) {
    offset += chunk.copy(joined, offset);
    if (slices.due) await slices.next();
  }
  return joined;
}

/** The sources of a document: our own `/protocols/<hash>` first, then those its metadata names. */
function sourcesOf(document: ProtocolDocument, base: string): string[] {
  const sources: string[] = [];
  if (base) sources.push(`${base}/protocols/${document.hash}`);
  const extra = document.metadata.sources;
  if (Array.isArray(extra))
    for (const source of extra) if (typeof source === 'string' && !sources.includes(source)) sources.push(source);
  if (!sources.length) sources.push(`/protocols/${document.hash}`);
  return sources;
}

const OPEN = Buffer.from('{');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from('}');

/** Base URLs whose listings are kept (without a public URL, each Host a client sends has its own sources). */
const MAX_BASES = 4;

/**
 * The receiver's `/wellknown`: the documents it can answer (a routine, an extension routine, or the LLM), local and
 * learned. The part of the folder's documents is built when the folder or the routines change, a few ms at a time;
 * the learned part (at most a few hundred documents) also at most once a second, so verdicts and routines other
 * processes or extensions add appear within a second. An extension's `routineFor` for a *local* document is asked
 * when the folder or routines change.
 */
export class WellknownListing {
  readonly #parts: WellknownParts;
  /** When the listing last read what other processes learned (the injected clock's ms). */
  #sharedReadAt: number | undefined;
  /** Counts the shared reads: the learned part is rebuilt after each. */
  #sharedReads = 0;
  readonly #bases = new Map<string, ForBase>();

  constructor(parts: WellknownParts) {
    this.#parts = parts;
  }

  /** The listing: hash → sources, our own `/protocols/<hash>` first (shared between calls: do not modify it). */
  async list(context?: RequestContext): Promise<Readonly<Wellknown>> {
    return (await this.prepared(context)).listing;
  }

  /** The listing and its JSON body: the same object until the listing changes. */
  async prepared(context?: RequestContext): Promise<ListingBody> {
    const { registry, suitability, logger, now, publicUrl, folder } = this.#parts;
    // Never a partial listing: while protocols/ is first read, the answer waits for it.
    if (registry.loading) await registry.loaded();
    const time = now();
    if (this.#sharedReadAt === undefined || time - this.#sharedReadAt >= SHARED_READ_INTERVAL_MS) {
      this.#sharedReadAt = time;
      this.#sharedReads += 1;
      await Promise.all([registry.refreshLearned(), suitability.load()]).catch((error: unknown) => {
        logger.warn(`/wellknown: could not read what other processes learned: ${describeError(error)}`);
      });
    }
    const base = (publicUrl ?? context?.baseUrl ?? '').replace(/\/+$/, '');
    const state = this.#forBase(base);
    const localKey = `${registry.localVersion}.${folder.routinesVersion}`;
    const local = await this.#localPart(state, localKey, base);
    const learnedKey = `${registry.learnedVersion}.${localKey}.${this.#sharedReads}`;
    if (state.learned?.key !== learnedKey)
      state.learned = await this.#build(learnedKey, base, this.#learnedDocuments());
    const learned = state.learned;
    if (state.ready?.local === local && state.ready.learned.digest === learned.digest) return state.ready;
    if (state.readyBuild?.local !== local || state.readyBuild.learned.digest !== learned.digest) {
      const ready = this.#ready(local, learned).then((built) => {
        // A newer build may have started meanwhile: only the latest one is kept.
        if (state.readyBuild?.ready === ready) state.ready = built;
        return built;
      });
      state.readyBuild = { local, learned, ready };
    }
    return state.readyBuild.ready;
  }

  /** The whole body from its parts, with its digest (from the parts' digests) and the listing made when first read. */
  async #ready(local: Part, learned: Part): Promise<Ready> {
    const separator = local.chunks.length && learned.chunks.length ? [COMMA] : [];
    const body = await joinInSlices([OPEN, ...local.chunks, ...separator, ...learned.chunks, CLOSE]);
    const digest = createHash('sha256').update(local.digest).update(learned.digest).digest('base64url');
    let listing: Wellknown | undefined;
    return {
      local,
      learned,
      // Made when first asked for (the HTTP answer needs only the body): 50,000 objects are garbage-collection work.
      get listing() {
        return (listing ??= JSON.parse(body.toString()) as Wellknown);
      },
      body,
      digest,
    };
  }

  #forBase(base: string): ForBase {
    let state = this.#bases.get(base);
    if (state) {
      // Most recently used last.
      this.#bases.delete(base);
    } else {
      state = { pieces: new Map() };
      if (this.#bases.size >= MAX_BASES) this.#bases.delete(this.#bases.keys().next().value!);
    }
    this.#bases.set(base, state);
    return state;
  }

  /** The folder's part, rebuilt when its key (folder, routines) changes; concurrent callers share a build. */
  async #localPart(state: ForBase, key: string, base: string): Promise<Part> {
    if (state.local?.key === key) return state.local;
    if (state.localBuild?.key !== key) {
      // Each entry is made as the build reaches it (50,000 made at once held the loop and lived long enough to be
      // copied by the garbage collector).
      const listing = this.#parts.registry.local();
      const documents = (function* (): Generator<KnownDocument> {
        for (const { name, document } of listing) yield { document, origin: 'local', name };
      })();
      const part = this.#build(key, base, documents, state.pieces).then((built) => {
        // A newer build may have started meanwhile: only the latest one is kept.
        if (state.localBuild?.part === part) state.local = built;
        return built;
      });
      state.localBuild = { key, part };
    }
    return state.localBuild.part;
  }

  #learnedDocuments(): KnownDocument[] {
    return this.#parts.registry
      .learned()
      .map((document: ProtocolDocument): KnownDocument => ({ document, origin: 'learned' }));
  }

  /**
   * Builds a part. With `pieces` (the folder's part, which may hold tens of thousands) each entry's text is reused
   * from the last build, the ones gone are forgotten, and the work is done a slice of a few ms at a time.
   */
  async #build(
    key: string,
    base: string,
    documents: Iterable<KnownDocument>,
    pieces?: Map<string, string>,
  ): Promise<Part> {
    const hash = createHash('sha256');
    const chunks: Buffer[] = [];
    let listed = 0;
    let batch: string[] = [];
    const close = () => {
      if (!batch.length) return;
      const chunk = Buffer.from(chunks.length ? `,${batch.join(',')}` : batch.join(','));
      hash.update(chunk);
      chunks.push(chunk);
      batch = [];
    };
    const slices = new Slices();
    for (const known of documents) {
      const answerable = this.#answersAtOnce(known);
      if (!(answerable ?? (await this.#canAnswer(known)))) continue;
      const id = known.document.hash;
      let piece = pieces?.get(id);
      if (piece === undefined) {
        piece = `"${id}":${JSON.stringify(sourcesOf(known.document, base))}`;
        pieces?.set(id, piece);
      }
      listed += 1;
      batch.push(piece);
      // A chunk is encoded every BATCH entries, so that encoding one never outlasts the slice it ends.
      if (batch.length >= BATCH) close();
      if (pieces && slices.due) {
        close();
        await slices.next();
      }
    }
    close();
    // Entries of documents no longer listed are forgotten (a walk only when some are).
    if (pieces && pieces.size > listed)
      for (const id of [...pieces.keys()]) if (this.#parts.registry.get(id)?.origin !== 'local') pieces.delete(id);
    return { key, chunks, digest: hash.digest('base64url') };
  }

  /** Whether a document is answered, when that is known without waiting (a routine file, or a local one with the LLM). */
  #answersAtOnce(known: KnownDocument): boolean | undefined {
    const { folder, extensions } = this.#parts;
    const hasLlm = this.#parts.llm !== undefined;
    if (folder.routineFor(known)) return true;
    if (known.origin === 'local' && (hasLlm || !extensions.routineFor)) return hasLlm;
    return undefined;
  }

  /** Whether the receiver can answer a document: a routine, an extension routine, or the LLM (with a verdict for learned PDs). */
  async #canAnswer(known: KnownDocument): Promise<boolean> {
    const { extensions, suitability, llm } = this.#parts;
    if (known.origin === 'local')
      return (await extensions.routineFor?.(known.document.hash, known.document)) !== undefined;
    const verdict = suitability.known(known.document.hash);
    if (verdict === false) return false;
    if ((await extensions.routineFor?.(known.document.hash, known.document)) !== undefined) return true;
    return verdict === true && llm !== undefined;
  }
}
