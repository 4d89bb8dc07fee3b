// Who answers a query or a conversation's next turn, refusing what the agent cannot serve (spec §2, §4).
import { AgoraError } from '../errors.js';
import type { ResponderCall } from '../llm/peer-answers.js';
import { NATURAL_LANGUAGE, type Metrics } from '../metrics.js';
import type { ProtocolRegistry } from '../protocol/registry.js';
import type { Route, TurnAnswerer } from './answer.js';
import type { Suitability } from './suitability.js';
import type { QueryTarget } from './target.js';
import type { ReceiverExtensions } from './types.js';

/** The parts of a receiver that decide a route. */
export type RouterParts = {
  registry: ProtocolRegistry;
  answerer: TurnAnswerer;
  suitability: Suitability;
  extensions: ReceiverExtensions;
  counters: Metrics;
  hasLlm: boolean;
  /** An LLM call setup under a protocol label and purpose (for the suitability verdict). */
  responderCall(protocol: string, purpose: string): ResponderCall;
};

/** The codes a refused query answers with. */
export type RefusalCode = 'UNSUPPORTED_PROTOCOL' | 'NATURAL_LANGUAGE_UNSUPPORTED' | 'TOO_MANY_CONVERSATIONS';

/** Decides the route of a query's target once, counting each refusal under its label. */
export class QueryRouter {
  readonly #parts: RouterParts;

  constructor(parts: RouterParts) {
    this.#parts = parts;
  }

  /**
   * The route of a new query when it needs no waiting: a document the agent holds, answered by its routine file or
   * by an extension's routine at hand (an approved generated one). The hot path of a routine agent takes it without
   * an `await`; anything else goes through {@link ofQuery}.
   */
  routeNow(target: QueryTarget): Route | undefined {
    if (target.kind !== 'protocol') return undefined;
    const known = this.#parts.registry.held(target.hash);
    return known && this.#parts.answerer.routeNow(known);
  }

  /** Who answers a new query: natural language, negotiation, or a protocol's routine, generated routine or LLM. */
  async ofQuery(target: QueryTarget, sources: readonly string[] | null | undefined): Promise<Route> {
    const { registry, answerer, suitability, extensions, hasLlm, responderCall } = this.#parts;
    switch (target.kind) {
      case 'natural':
        if (!hasLlm) this.refuse('NATURAL_LANGUAGE_UNSUPPORTED', NATURAL_LANGUAGE);
        // The LLM is shown the agent's protocols: all of them, once protocols/ is first read.
        if (registry.loading) await registry.loaded();
        return { kind: 'natural' };
      case 'negotiation':
        if (!hasLlm || !extensions.negotiate) this.refuse('UNSUPPORTED_PROTOCOL', 'negotiation');
        if (registry.loading) await registry.loaded();
        return { kind: 'negotiation' };
      case 'malformed':
        return this.refuse('UNSUPPORTED_PROTOCOL', 'unknown');
      case 'protocol': {
        const known = await registry.resolve(target.hash, sources ?? undefined);
        if (!known) this.refuse('UNSUPPORTED_PROTOCOL', 'unknown');
        const route = await answerer.route(known);
        // A learned PD with no routine is served by the LLM only once judged suitable (spec §4).
        if (route.kind === 'llm' && known.origin !== 'local') {
          if (!hasLlm) this.refuse('UNSUPPORTED_PROTOCOL', known.document.metadata.name);
          const suitable = await suitability.judge(known.document, () =>
            responderCall(known.document.metadata.name, 'suitability'),
          );
          if (!suitable) this.refuse('UNSUPPORTED_PROTOCOL', known.document.metadata.name);
        }
        // The agent serves it: only now is a peer's document stored and listed.
        if (known.origin === 'candidate' && route.kind !== 'negotiation' && route.kind !== 'natural')
          return { ...route, known: await registry.adopt(known) };
        return route;
      }
    }
  }

  /** Who answers the next turn of a stored conversation (its document was servable when it began). */
  async ofRecord(target: QueryTarget, sources: readonly string[] | null | undefined): Promise<Route> {
    if (target.kind === 'natural' || target.kind === 'negotiation') return { kind: target.kind };
    const hash = target.kind === 'protocol' ? target.hash : target.raw;
    const known = await this.#parts.registry.forConversation(hash, sources ?? undefined);
    if (!known) this.refuse('UNSUPPORTED_PROTOCOL', 'unknown');
    return this.#parts.answerer.route(known);
  }

  /** Counts a refused query under its label and throws its error. */
  refuse(code: RefusalCode, label: string): never {
    const error = new AgoraError(code);
    this.#parts.counters.query('failure', label, error.message);
    throw error;
  }
}
