import type { SourceTypeCheck } from './_source-checks.js';
import type { ZodType } from 'zod';
import type { ConversationMessage, ConversationStore } from '../conversation/store.js';
import type { ResponderCall } from '../llm/peer-answers.js';
import type { LanguageModel } from '../llm/model.js';
import type { Logger } from '../log.js';
import type { AgentMemory } from '../memory/file.js';
import type { Metrics, QueryPath } from '../metrics.js';
import type { ProtocolDocument } from '../protocol/document.js';
import type { RoutineContext } from '../routine/define.js';
import type { FollowUpRequest, JsonValue, QueryRequest, SuccessResponse, Wellknown } from '../schemas.js';
import type { Tool } from '../tool/define.js';
import type { EventChannel } from './event-channel.js';
import type { ReplyEvent } from './event-channel.js';
import type { RequestContext } from './context.js';

export type { RequestContext } from './context.js';

/** A request's signal, or how to make it when something first needs it (see RequestContext.signalWhenNeeded). */
export type SignalSource = AbortSignal | (() => AbortSignal) | undefined;

/**
 * `/wellknown` built once per change: the listing (shared: do not modify it; made when first read), its JSON text as
 * bytes, and a digest of them (the same for the same listing, across processes). The same object is handed out until
 * the listing changes, so what is made of it (an ETag, compressed encodings) can be kept beside it.
 */
export type ListingBody = { readonly listing: Readonly<Wellknown>; readonly body: Buffer; readonly digest: string };

/** What the Agora wire and the faces need from a receiver: the calls all receivers answer, and what else it can do. */
export interface ReceiverApi {
  /** `POST /`: a new query. */
  query(request: QueryRequest, context?: RequestContext): Promise<SuccessResponse>;
  /** `POST /conversations/:id`: the next turn. */
  followUp(id: string, request: FollowUpRequest, context?: RequestContext): Promise<SuccessResponse>;
  /** `DELETE /conversations/:id`. */
  end(id: string): Promise<void>;
  /** `GET /wellknown`: hex hash → sources. */
  wellknown(context?: RequestContext): Promise<Wellknown>;
  /** `GET /protocols/:hash`: the exact text of a document this agent holds (hash already normalized to hex). */
  document(hash: string): Promise<string | undefined>;
  /** `GET /metrics`: Prometheus text. */
  metrics(): Promise<string>;
  /** What this receiver can do besides: each capability an object, absent when it cannot (`{}`: none). */
  readonly capabilities: ReceiverCapabilities;
}

/** The optional capabilities of a receiver, each with what its absence means. */
export type ReceiverCapabilities = {
  /** Streamed replies and their resumption; without it replies come whole and `/conversations/:id/events` is 404. */
  readonly streaming?: ReplyStreaming | undefined;
  /** `/wellknown` built once per change; without it the listing is serialized per request. Cards can list it too. */
  readonly listing?: PreparedListing | undefined;
  /** How the receiver is doing; without it `/health` says ok and `/ready` ready. */
  readonly health?: ReceiverHealth | undefined;
  /** What faces describe tools with; without it no schemas, no natural language, no notice of changed protocols. */
  readonly description?: ServedDescription | undefined;
};

/** Replies as streams of events. Every method throws AgoraError on failure. */
export interface ReplyStreaming {
  /** `POST /` streamed: the reply's pieces, then its `done` or `error` event. */
  queryStream(request: QueryRequest, context?: RequestContext): EventChannel;
  /** `POST /conversations/:id` streamed. */
  followUpStream(id: string, request: FollowUpRequest, context?: RequestContext): EventChannel;
  /**
   * `GET /conversations/:id/events`: the events of a streamed turn after `lastEventId` (else the latest turn's), then
   * live until its `done` or `error`. Throws CONVERSATION_NOT_FOUND, CONVERSATION_EXPIRED, or BAD_REQUEST for an id
   * never sent or no longer kept.
   */
  events(id: string, lastEventId: number | undefined, context?: RequestContext): Promise<AsyncIterable<ReplyEvent>>;
}

/** `/wellknown` built once per change. */
export interface PreparedListing {
  /** The listing and its JSON body, the same object until the listing changes. */
  wellknownBody(context?: RequestContext): Promise<ListingBody>;
}

/** How a receiver is doing, for `/health` and `/ready`. */
export interface ReceiverHealth {
  /** Whether `protocols/` is still being read at the start (`GET /health` says so). */
  loading(): boolean;
  /** Whether what requests need (the conversation store) answers now (`GET /ready`). */
  ready(): Promise<boolean>;
}

/** What a receiver tells the faces about what it serves. */
export interface ServedDescription {
  /** Calls `listener` when the documents in `protocols/` change (faces announce it); returns how to stop. */
  onProtocolsChanged(listener: () => void): () => void;
  /** The zod schemas of the routine file that answers a document (hex hash), when it has one (faces describe tools with them). */
  routineSchemas(hash: string): { input?: ZodType; output?: ZodType } | undefined;
  /** Whether a query in natural language can be answered (an LLM is configured). */
  answersNaturalLanguage(): boolean;
}

/** A routine supplied by an extension (e.g. LLM-written routines): throws to fall back to the LLM. */
export type RoutineRunner = (body: JsonValue, context: Omit<RoutineContext, 'signal'>) => Promise<JsonValue>;

/** What the receiver reports after each answered turn under a protocol or in natural language. */
export type ServedEvent = {
  /** Hex hash, or null for natural language. */
  hash: string | null;
  document?: ProtocolDocument;
  path: QueryPath;
  body: JsonValue;
  reply?: JsonValue;
  conversationId: string | null;
  turn: number;
  /** True for the first turn of a conversation (or a single-round query). */
  firstTurn: boolean;
};

/** Extensions plug into the receiver here (LLM-written routines, negotiation). */
export type ReceiverExtensions = {
  /**
   * A routine for a PD that has no file in `routines/`. Answered without a promise when it is known at once: a
   * runner so returned lets a query take the receiver's synchronous route, as a routine file does.
   */
  routineFor?(hash: string, document: ProtocolDocument): RoutineRunner | undefined | Promise<RoutineRunner | undefined>;
  /** Called after every answered turn (never awaited by the peer's reply; errors are logged). */
  served?(event: ServedEvent): void | Promise<void>;
  /** Answers a turn of a `"negotiation"` conversation. */
  negotiate?(call: ResponderCall, history: readonly ConversationMessage[], body: JsonValue): Promise<JsonValue>;
};

/** Options of `Receiver`. */
export type ReceiverOptions = {
  /** The agent folder: `protocols/`, `routines/`, `tools/`, `.agora/` (default: the current folder). */
  dir?: string;
  /** Shown to the LLM and in logs (default: package.json name, else the folder name). */
  name?: string;
  description?: string;
  /** Type-checks `routines/` and `tools/` files as they load, warning of each error (default none; `startAgent`'s does). */
  typeCheck?: SourceTypeCheck;
  store?: ConversationStore;
  /** What the agent learns (default: files under `<dir>/.agora/`). */
  memory?: AgentMemory;
  /**
   * The LLM fallback; absent or `null`: routines only. The receiver never reads the environment for one: pass
   * `chooseModel({}, process.env)` (what `agora serve` and `startAgent({ llm: 'auto' })` do) to pick the provider whose
   * key is set.
   */
  llm?: LanguageModel | null;
  /** Tools in addition to those in `tools/`. */
  tools?: Tool[];
  /** Milliseconds of inactivity before a conversation expires (default 300,000: five minutes). */
  conversationTtlMs?: number;
  /**
   * Milliseconds an expired or ended conversation still answers "Conversation expired" rather than "not found"
   * (default: one `conversationTtlMs`, the spec's minimum, which keeps the tombstones of the default store smaller
   * than the live conversations at any steady rate; never less than one TTL).
   */
  tombstoneTtlMs?: number;
  /** Milliseconds a routine may run (default 10,000). */
  routineTimeoutMs?: number;
  /**
   * Interrupt the synchronous stretches of hand-written routines past 500 ms (or `routineTimeoutMs`), so an endless
   * loop fails its call instead of freezing the agent (default false; `--isolate-routines`, AGORA_ISOLATE_ROUTINES).
   * Costs ~65 µs per call; code after an `await` and memory are not covered. See src/routine/isolate.ts.
   */
  isolateRoutines?: boolean;
  /** Allow protocol sources on loopback and private networks (default false). */
  allowPrivateSources?: boolean;
  /** Largest protocol document accepted from a peer, from any source (`data:` included), in bytes (default 64 KiB). */
  maxDocumentBytes?: number;
  /** Documents learned from peers kept, the least recently used evicted first (default: the registry's, 500). */
  maxLearnedDocuments?: number;
  /** Bytes of documents learned from peers kept (default: the registry's, 16 MiB). */
  maxLearnedBytes?: number;
  /** This agent's public base URL, for the `/protocols/:hash` sources it lists. */
  publicUrl?: string;
  /** Cap on live conversations (default unlimited). */
  maxConversations?: number;
  /** Messages of history kept per conversation for the LLM (default 40, the latest). */
  maxHistory?: number;
  /** Characters one LLM call may carry: system prompt, document, history (by size) and body (default 200,000). */
  maxLlmChars?: number;
  /** Bound on LLM calls per answer in the tool loop (default: the tool loop's, 8). */
  maxToolSteps?: number;
  /** Watch `protocols/`, `routines/` and `tools/` for changes (default true). */
  watch?: boolean;
  /**
   * Milliseconds between safety rescans of `protocols/`, `routines/` and `tools/`, for changes a watcher missed (the
   * platform may drop events unreported). A rescan stats each file and reads only the ones whose size or time
   * changed; `routines/` and `tools/` reload only when their listing, sizes or times differ. Default 300,000 while
   * watching, none with `watch: false`; 0 turns it off (`--rescan-interval` in seconds, AGORA_RESCAN_INTERVAL).
   */
  rescanIntervalMs?: number;
  /**
   * Whether `Receiver.start` (and `load`) wait until `protocols/` has been read (default true). With false they
   * resolve once routines and tools are loaded, and the folder goes on loading a slice at a time: a document found
   * answers at once, a lookup that misses (a query, `/protocols/<hash>`) waits for the load, and `/wellknown` is
   * answered once it is complete. `receiver.loading()` and `receiver.loaded()` tell where it is. `startAgent` always
   * listens before the load ends; this option says whether it also resolves before.
   */
  waitForProtocols?: boolean;
  logger?: Logger;
  metrics?: Metrics;
  extensions?: ReceiverExtensions;
  /** Clock in Unix milliseconds. */
  now?: () => number;
};
