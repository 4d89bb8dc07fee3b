import type { TurnUsage } from '../_usage.js';
import type { ConversationMessage } from '../conversation/store.js';
import { AgoraError, describeError, isAgoraError } from '../errors.js';
import { fitHistory } from '../llm/budget.js';
import { answerNaturalLanguage, answerUnderProtocol, type ResponderCall } from '../llm/peer-answers.js';
import { NATURAL_LANGUAGE, type QueryPath } from '../metrics.js';
import type { KnownDocument } from '../protocol/registry.js';
import type { RoutineContext } from '../routine/define.js';
import { runRoutine } from '../routine/run.js';
import type { JsonObject, JsonValue } from '../schemas.js';
import { inSpan, TRACING, type Attributes, type Span, type SpanOptions } from '../telemetry/tracing.js';
import type { AgentLlm } from './agent-llm.js';
import type { AgentFolder } from './folder.js';
import type { TurnParts } from './parts.js';
import type { TurnRoute } from './route.js';
import type { RequestContext, ServedEvent, SignalSource } from './types.js';

/** A conversation's turn as the answer sees it; the answer mutates `state` and `history`. */
export type Turn = { id: string | null; turn: number; state: JsonObject; history: ConversationMessage[] };

/** The parts an answerer reads. */
export type AnswererParts = Pick<
  TurnParts,
  'folder' | 'counters' | 'logger' | 'extensions' | 'llm' | 'routineLimits' | 'maxHistory' | 'maxHistoryChars'
>;

/** The label a route is counted and logged under. */
export function labelOf(route: TurnRoute): string {
  if (route.kind === 'negotiation') return 'negotiation';
  if (route.kind === 'natural') return NATURAL_LANGUAGE;
  return route.known.document.metadata.name;
}

/** A turn's span attributes: the protocol (hash and name), how it is routed, the conversation and turn number. */
function turnAttributes(route: TurnRoute, turn: Turn): Attributes {
  const attributes: Attributes = { 'agora.route': route.kind, 'agora.turn': turn.turn };
  if (turn.id !== null) attributes['agora.conversation.id'] = turn.id;
  if (route.kind !== 'natural' && route.kind !== 'negotiation') {
    attributes['agora.protocol.hash'] = route.known.document.hash;
    attributes['agora.protocol.name'] = route.known.document.metadata.name;
  }
  return attributes;
}

/** A routine run's span attributes: the protocol it answers, and whose routine (`routines/` or `generated`). */
function routineSpan(known: KnownDocument, source: string): SpanOptions {
  return {
    attributes: {
      'agora.protocol.hash': known.document.hash,
      'agora.protocol.name': known.document.metadata.name,
      'agora.routine.source': source,
    },
  };
}

/** The signal source of a request context. */
export function signalOf(context: RequestContext | undefined): SignalSource {
  return context?.signalWhenNeeded ?? context?.signal;
}

/** The signal itself, made now if it was not yet. */
export function signalNow(source: SignalSource): AbortSignal | undefined {
  return typeof source === 'function' ? source() : source;
}

/**
 * Answers a routed turn: its routine, an extension's routine (the LLM if it fails), or the LLM; records history,
 * metrics and the served event.
 */
export class TurnAnswerer {
  readonly #parts: AnswererParts;

  constructor(parts: AnswererParts) {
    this.#parts = parts;
  }

  /** The LLM, or LLM_UNAVAILABLE for an agent of routines only. */
  #llm(): AgentLlm {
    if (!this.#parts.llm) throw new AgoraError('LLM_UNAVAILABLE');
    return this.#parts.llm;
  }

  /**
   * Answers one turn; mutates `turn.state` and `turn.history`. The context's `onDelta` gets the reply's pieces as they
   * come (streaming), its `outcome` what was taken.
   */
  answer(route: TurnRoute, turn: Turn, body: JsonValue, context: RequestContext | undefined): Promise<JsonValue> {
    if (!TRACING.on) return this.#answer(route, turn, body, context, undefined);
    return inSpan('agora.turn', { attributes: turnAttributes(route, turn) }, (span) =>
      this.#answer(route, turn, body, context, span),
    );
  }

  async #answer(
    route: TurnRoute,
    turn: Turn,
    body: JsonValue,
    context: RequestContext | undefined,
    span: Span | undefined,
  ): Promise<JsonValue> {
    // Kept small, its work in helpers: V8 allocates an async function's whole register file each time it awaits.
    const signal = signalOf(context);
    const onDelta = context?.onDelta;
    const outcome = context?.outcome;
    const label = labelOf(route);
    let path: QueryPath = 'failure';
    let reply: JsonValue | undefined;
    let reason: string | undefined;
    // A routine's run is timed here, and its start also sets its deadline.
    const started = route.kind === 'routine' ? performance.now() : 0;
    try {
      if (route.kind === 'generated')
        ({ path, reply } = await this.#generated(route, label, turn, body, signal, onDelta, context?.usage));
      else {
        reply = await this.#reply(route, turn, body, signal, onDelta, started, context?.usage);
        path = route.kind === 'routine' ? 'routine' : 'llm';
      }
      // The LLM reads the history; a conversation under a routine from routines/ never reaches the LLM (a
      // failing routine answers `Routine failed`), so its turns skip the cost of carrying it. A single-round turn
      // (no conversation id) has no later turn to read it: nothing is kept for it either.
      if (route.kind !== 'routine' && turn.id !== null) this.#remember(turn, body, reply);
      return reply;
    } catch (error) {
      path = 'failure';
      // The fixed texts of our own errors only: a peer's data never reaches the dashboard this way.
      reason = isAgoraError(error) ? error.message : 'Internal error';
      throw this.#failure(error, label);
    } finally {
      if (route.kind === 'routine') this.#took(label, started);
      this.#parts.counters.query(path, label, reason);
      span?.setAttribute('agora.path', path);
      if (outcome) {
        outcome.taken = path;
        if (route.kind !== 'natural' && route.kind !== 'negotiation') {
          outcome.protocol = route.known.document.hash;
          outcome.protocolName = route.known.document.metadata.name;
        } else outcome.protocolName = label;
      }
      if (this.#parts.extensions.served && route.kind !== 'negotiation') this.#served(route, turn, body, path, reply);
    }
  }

  /** Records a routine's run time, from its start on `performance.now()`'s clock. */
  #took(label: string, started: number): void {
    this.#parts.counters.routineLatency(label, (performance.now() - started) / 1000);
  }

  /** Adds a turn to the history the LLM reads, bounded in turns and in size. */
  #remember(turn: Turn, body: JsonValue, reply: JsonValue): void {
    turn.history.push({ role: 'peer', body }, { role: 'agent', body: reply });
    // Bounded: a long conversation must not grow its record (and every turn's copy) forever.
    if (turn.history.length > this.#parts.maxHistory)
      turn.history.splice(0, turn.history.length - this.#parts.maxHistory);
    // And by size: a few huge turns must not make every later record (and its copies) huge.
    const kept = fitHistory(turn.history, this.#parts.maxHistoryChars);
    if (kept.length < turn.history.length) turn.history.splice(0, turn.history.length - kept.length);
  }

  /** Logs a failed turn as it deserves, and returns what to throw (anything not ours becomes INTERNAL). */
  #failure(error: unknown, label: string): unknown {
    const { logger } = this.#parts;
    if (
      isAgoraError(error) &&
      (error.code === 'ROUTINE_FAILED' || error.code === 'LLM_UNAVAILABLE' || error.code === 'INTERNAL')
    ) {
      logger.error(`${label}: ${error.message}${error.cause ? `: ${describeError(error.cause)}` : ''}`);
    } else if (isAgoraError(error) && error.code === 'REQUEST_TOO_LARGE' && error.cause) {
      logger.warn(`${label}: ${describeError(error.cause)}`);
    } else if (!isAgoraError(error)) {
      logger.error(`${label}: ${describeError(error)}`);
      return new AgoraError('INTERNAL', undefined, { cause: error });
    }
    return error;
  }

  #served(route: TurnRoute, turn: Turn, body: JsonValue, path: QueryPath, reply: JsonValue | undefined): void {
    const known = route.kind === 'natural' || route.kind === 'negotiation' ? undefined : route.known;
    const event: ServedEvent = {
      hash: known?.document.hash ?? null,
      path,
      body,
      conversationId: turn.id,
      turn: turn.turn,
      firstTurn: turn.turn === 1,
      ...(known ? { document: known.document } : {}),
      ...(reply !== undefined ? { reply } : {}),
    };
    Promise.resolve()
      .then(() => this.#parts.extensions.served?.(event))
      .catch((error: unknown) => this.#parts.logger.error(`served hook failed: ${describeError(error)}`));
  }

  /**
   * The reply of every route but a generated routine's. Not an async function: each returns the promise it waits on,
   * so a query awaits once here, not twice (V8 allocates an async function's register file each time it awaits).
   */
  #reply(
    route: Exclude<TurnRoute, { kind: 'generated' }>,
    turn: Turn,
    body: JsonValue,
    signal: SignalSource,
    onDelta: ((delta: JsonValue) => void) | undefined,
    started: number,
    usage: TurnUsage | undefined,
  ): Promise<JsonValue> {
    const parts = this.#parts;
    switch (route.kind) {
      case 'routine': {
        const { routine, known } = route;
        const run = () =>
          runRoutine(
            routine.routine,
            body,
            this.#routineContext(known, turn, signal),
            known.document,
            parts.routineLimits,
            onDelta,
            started,
          );
        return TRACING.on ? inSpan('agora.routine', routineSpan(known, 'routines/'), run) : run();
      }
      case 'negotiation':
        return parts.extensions.negotiate!(
          this.#llm().call('negotiation', 'negotiation', signalNow(signal), usage),
          turn.history,
          body,
        );
      case 'natural': {
        if (!parts.llm) throw new AgoraError('NATURAL_LANGUAGE_UNSUPPORTED');
        const answer = () =>
          answerNaturalLanguage(this.#answerCall(NATURAL_LANGUAGE, signal, onDelta, usage), turn.history, body);
        return afterTools(parts.folder, answer);
      }
      case 'llm':
        return afterTools(parts.folder, () =>
          this.#underProtocol(route.known, turn, body, () => this.#answerCall(labelOf(route), signal, onDelta, usage)),
        );
    }
  }

  /** An extension's routine (timed), or the LLM when it fails (BAD_REQUEST aside). */
  async #generated(
    route: Extract<TurnRoute, { kind: 'generated' }>,
    label: string,
    turn: Turn,
    body: JsonValue,
    signal: SignalSource,
    onDelta: ((delta: JsonValue) => void) | undefined,
    usage: TurnUsage | undefined,
  ): Promise<{ path: QueryPath; reply: JsonValue }> {
    const parts = this.#parts;
    const started = performance.now();
    try {
      const run = () => route.runner(body, this.#routineContext(route.known, turn, signal));
      const reply = TRACING.on
        ? await inSpan('agora.routine', routineSpan(route.known, 'generated'), run)
        : await run();
      return { path: 'routine', reply };
    } catch (error) {
      if (isAgoraError(error) && error.code === 'BAD_REQUEST') throw error;
      parts.logger.warn(
        `${label}: generated routine failed, falling back to the LLM: ${describeError(error instanceof Error && error.cause ? error.cause : error)}`,
      );
      if (!parts.llm) throw new AgoraError('ROUTINE_FAILED', 'Routine failed', { cause: error });
    } finally {
      this.#took(label, started);
    }
    await parts.folder.toolsReady();
    return {
      path: 'llm',
      reply: await this.#underProtocol(route.known, turn, body, () => this.#answerCall(label, signal, onDelta, usage)),
    };
  }

  async #underProtocol(
    known: KnownDocument,
    turn: Turn,
    body: JsonValue,
    call: () => ResponderCall,
  ): Promise<JsonValue> {
    if (!this.#parts.llm) throw new AgoraError('UNSUPPORTED_PROTOCOL');
    return answerUnderProtocol(call(), known.document, turn.history, body);
  }

  #answerCall(
    protocol: string,
    signal: SignalSource,
    onDelta: ((delta: JsonValue) => void) | undefined,
    usage: TurnUsage | undefined,
  ): ResponderCall {
    const call = this.#llm().call(protocol, 'answer', signalNow(signal), usage);
    return onDelta ? { ...call, onText: onDelta } : call;
  }

  #routineContext(known: KnownDocument, turn: Turn, signal: SignalSource): Omit<RoutineContext, 'signal'> {
    const document = known.document;
    return {
      conversation: { id: turn.id, turn: turn.turn, state: turn.state },
      protocol: { name: document.metadata.name, hash: document.hash, metadata: document.metadata },
      logger: this.#parts.folder.routineLogger(known.name ?? document.hash.slice(0, 8)),
      tools: this.#parts.folder.toolbox(signal),
    };
  }
}

/** Runs an LLM answer once the tools it may be offered are listed (MCP servers start on first need). */
function afterTools(folder: AgentFolder, answer: () => Promise<JsonValue>): Promise<JsonValue> {
  const ready = folder.toolsReady();
  return ready ? ready.then(answer) : answer();
}
