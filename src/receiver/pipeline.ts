// A receiver's turns, from the wire's request to the stored conversation: resolve the target → route → answer →
// persist. Synchronous up to one seam (the route), so a routine's single-round query waits on its answer alone.
import { nanoid } from 'nanoid';
import { AgoraError } from '../errors.js';
import type { FollowUpRequest, JsonValue, QueryRequest, SuccessResponse } from '../schemas.js';
import { labelOf, TurnAnswerer, type Turn } from './answer.js';
import type { TurnParts } from './parts.js';
import { Router, type TurnRoute } from './route.js';
import { recordHashOf, targetOf, targetOfRecord, type QueryTarget } from './target.js';
import type { RequestContext } from './types.js';

/**
 * Whether a query opens a conversation: Python senders send `multiround: true` on natural language too; a negotiation
 * always does.
 */
function opensConversation(request: QueryRequest, target: QueryTarget): boolean {
  return request.multiround === true || target.kind === 'negotiation';
}

/** A single-round reply. */
function success(body: JsonValue): SuccessResponse {
  return { status: 'success', body };
}

/**
 * The turn pipeline of one receiver: owns its router and answerer, built from one {@link TurnParts}. A query is
 * routed without an `await` when its route is known at once (the one place where sync meets async); the rest of the
 * way (a document to find or judge, a conversation to store) is asynchronous.
 */
export class TurnPipeline {
  readonly #parts: TurnParts;
  readonly #router: Router;
  readonly #answerer: TurnAnswerer;

  constructor(parts: TurnParts) {
    this.#parts = parts;
    this.#router = new Router(parts);
    this.#answerer = new TurnAnswerer(parts);
  }

  /** A new query: answered once (single-round), or the first turn of a conversation, then stored. */
  query(request: QueryRequest, context?: RequestContext): Promise<SuccessResponse> {
    // Not an async function: a single-round query under a held routine (the hot path) waits on its answer alone, with
    // no async frame of its own (V8 allocates an async function's register file each time it awaits).
    try {
      const target = this.#parts.targets.of(request.protocolHash);
      const route = this.#router.ofQuery(target, request.protocolSources);
      if (route instanceof Promise || opensConversation(request, target))
        return this.#routedQuery(route, target, request, context);
      return this.#singleRound(route, request, context).then(success);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The seam: a route still being decided is awaited here, and a conversation is opened from here. */
  async #routedQuery(
    decided: TurnRoute | Promise<TurnRoute>,
    target: QueryTarget,
    request: QueryRequest,
    context: RequestContext | undefined,
  ): Promise<SuccessResponse> {
    const route = await decided;
    if (opensConversation(request, target)) return this.#firstTurn(route, target, request, context);
    return success(await this.#singleRound(route, request, context));
  }

  /** A query's one turn, with no conversation kept. */
  #singleRound(route: TurnRoute, request: QueryRequest, context: RequestContext | undefined): Promise<JsonValue> {
    context?.onTurn?.(null, true);
    return this.#answerer.answer(route, { id: null, turn: 1, state: {}, history: [] }, request.body, context);
  }

  /** A conversation's first turn: answered, then stored under a new id (within the cap on live conversations). */
  async #firstTurn(
    route: TurnRoute,
    target: QueryTarget,
    request: QueryRequest,
    context: RequestContext | undefined,
  ): Promise<SuccessResponse> {
    const { capacity, store, now, ttlMs } = this.#parts;
    // The place is taken before the first turn runs, so concurrent first turns cannot together pass the cap.
    const release = capacity ? await capacity.reserve() : undefined;
    if (release === false) this.#router.refuse('TOO_MANY_CONVERSATIONS', labelOf(route));
    try {
      const id = nanoid(24);
      const turn: Turn = { id, turn: 1, state: {}, history: [] };
      context?.onTurn?.(id, true);
      const reply = await this.#answerer.answer(route, turn, request.body, context);
      const createdAt = now();
      const expiresAt = createdAt + ttlMs;
      await store.create({
        id,
        protocolHash: recordHashOf(target),
        createdAt,
        expiresAt,
        turn: 1,
        state: turn.state,
        history: turn.history,
      });
      return { status: 'success', body: reply, conversationId: id, conversationExpires: Math.floor(expiresAt / 1000) };
    } finally {
      release?.();
    }
  }

  /** A conversation's next turn: routed, answered and stored inside the store's turn (one read, under its lock). */
  async followUp(id: string, request: FollowUpRequest, context?: RequestContext): Promise<SuccessResponse> {
    const { store, now, ttlMs } = this.#parts;
    const named =
      request.protocolHash === undefined || request.protocolHash === null
        ? undefined
        : recordHashOf(targetOf(request.protocolHash));
    const reply = await store.runTurn(id, ttlMs, async (current) => {
      if (named !== undefined && named !== current.protocolHash) throw new AgoraError('PROTOCOL_CHANGED');
      const route = await this.#router.ofRecord(targetOfRecord(current.protocolHash), request.protocolSources);
      const turn: Turn = { id, turn: current.turn + 1, state: current.state, history: current.history };
      context?.onTurn?.(id, false);
      const body = await this.#answerer.answer(route, turn, request.body, context);
      return { result: body, state: turn.state, history: turn.history };
    });
    const expires = Math.floor((now() + ttlMs) / 1000);
    return { status: 'success', body: reply, conversationId: id, conversationExpires: expires };
  }
}
