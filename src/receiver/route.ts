// Who answers a query or a conversation's next turn, decided in one place, refusing what the agent cannot serve
// (spec §2, §4). The decision is a value when nothing needs waiting for (the hot path), else a promise of it.
import { AgoraError } from '../errors.js';
import { NATURAL_LANGUAGE } from '../metrics.js';
import type { KnownDocument } from '../protocol/registry.js';
import type { LoadedRoutine } from '../routine/load.js';
import type { TurnParts } from './parts.js';
import type { QueryTarget } from './target.js';
import type { RoutineRunner } from './types.js';

/** Who answers a turn, looked up once per turn. */
export type TurnRoute =
  | { kind: 'negotiation' }
  | { kind: 'natural' }
  /** A routine file from `routines/`. */
  | { kind: 'routine'; known: KnownDocument; routine: LoadedRoutine }
  /** An extension's routine (e.g. LLM-written), with the LLM as fallback when it throws. */
  | { kind: 'generated'; known: KnownDocument; runner: RoutineRunner }
  | { kind: 'llm'; known: KnownDocument };

/** A route known at once, or one still being decided. */
export type RouteDecision = TurnRoute | Promise<TurnRoute>;

/** The codes a refused query answers with. */
export type RefusalCode = 'UNSUPPORTED_PROTOCOL' | 'NATURAL_LANGUAGE_UNSUPPORTED' | 'TOO_MANY_CONVERSATIONS';

const NATURAL: TurnRoute = { kind: 'natural' };
const NEGOTIATION: TurnRoute = { kind: 'negotiation' };

/** The parts a router reads. */
export type RouterParts = Pick<TurnParts, 'registry' | 'folder' | 'suitability' | 'extensions' | 'counters' | 'llm'>;

/** Decides the route of a query's target once, counting each refusal under its label. */
export class Router {
  readonly #parts: RouterParts;

  constructor(parts: RouterParts) {
    this.#parts = parts;
  }

  /**
   * Who answers a document: its routine file, else an extension's routine, else the LLM. A value when the extension
   * answers at once (or is not asked), a promise when its answer is still to come.
   */
  ofDocument(known: KnownDocument): RouteDecision {
    const { folder, extensions } = this.#parts;
    const routine = folder.routineFor(known);
    if (routine) return { kind: 'routine', known, routine };
    const runner = extensions.routineFor?.(known.document.hash, known.document);
    if (runner === undefined) return { kind: 'llm', known };
    if (typeof runner === 'function') return { kind: 'generated', known, runner };
    return Promise.resolve(runner).then((found): TurnRoute =>
      found ? { kind: 'generated', known, runner: found } : { kind: 'llm', known },
    );
  }

  /**
   * Who answers a new query: natural language, negotiation, or a protocol's routine, generated routine or LLM. A
   * value, without an `await`, for a document the agent holds and answers with a routine (the hot path of a routine
   * agent) or serves from its folder; a promise when a document must be found, judged or waited for.
   */
  ofQuery(target: QueryTarget, sources: readonly string[] | null | undefined): RouteDecision {
    const { registry, extensions, llm } = this.#parts;
    switch (target.kind) {
      case 'natural':
        if (!llm) this.refuse('NATURAL_LANGUAGE_UNSUPPORTED', NATURAL_LANGUAGE);
        // The LLM is shown the agent's protocols: all of them, once protocols/ is first read.
        return registry.loading ? registry.loaded().then(() => NATURAL) : NATURAL;
      case 'negotiation':
        if (!llm || !extensions.negotiate) this.refuse('UNSUPPORTED_PROTOCOL', 'negotiation');
        return registry.loading ? registry.loaded().then(() => NEGOTIATION) : NEGOTIATION;
      case 'malformed':
        return this.refuse('UNSUPPORTED_PROTOCOL', 'unknown');
      case 'protocol': {
        const known = registry.held(target.hash);
        if (known === undefined) return this.#ofProtocol(target.hash, sources, undefined);
        const route = this.ofDocument(known);
        // A learned document served by the LLM is judged first (below); anything else held is decided now.
        if (!(route instanceof Promise) && (route.kind !== 'llm' || known.origin === 'local')) return route;
        return this.#ofProtocol(target.hash, sources, { known, route });
      }
    }
  }

  /** Who answers a query under a protocol that needed waiting: finding its document, an extension, a verdict. */
  async #ofProtocol(
    hash: string,
    sources: readonly string[] | null | undefined,
    held: { known: KnownDocument; route: RouteDecision } | undefined,
  ): Promise<TurnRoute> {
    const { registry, suitability, llm } = this.#parts;
    const known = held?.known ?? (await registry.resolve(hash, sources ?? undefined));
    if (!known) this.refuse('UNSUPPORTED_PROTOCOL', 'unknown');
    const route = await (held?.route ?? this.ofDocument(known));
    // A learned PD with no routine is served by the LLM only once judged suitable (spec §4).
    if (route.kind === 'llm' && known.origin !== 'local') {
      const name = known.document.metadata.name;
      if (!llm) this.refuse('UNSUPPORTED_PROTOCOL', name);
      const suitable = await suitability.judge(known.document, () => llm.call(name, 'suitability'));
      if (!suitable) this.refuse('UNSUPPORTED_PROTOCOL', name);
    }
    // The agent serves it: only now is a peer's document stored and listed.
    if (known.origin === 'candidate' && route.kind !== 'negotiation' && route.kind !== 'natural')
      return { ...route, known: await registry.adopt(known) };
    return route;
  }

  /** Who answers the next turn of a stored conversation (its document was servable when it began). */
  async ofRecord(target: QueryTarget, sources: readonly string[] | null | undefined): Promise<TurnRoute> {
    if (target.kind === 'natural') return NATURAL;
    if (target.kind === 'negotiation') return NEGOTIATION;
    const hash = target.kind === 'protocol' ? target.hash : target.raw;
    const known = await this.#parts.registry.forConversation(hash, sources ?? undefined);
    if (!known) this.refuse('UNSUPPORTED_PROTOCOL', 'unknown');
    return this.ofDocument(known);
  }

  /** Counts a refused query under its label and throws its error. */
  refuse(code: RefusalCode, label: string): never {
    const error = new AgoraError(code);
    this.#parts.counters.query('failure', label, error.message);
    throw error;
  }
}
