// What a request brings to the receiver besides its body: where it came from, its signal, the streaming hooks.
import type { TurnUsage } from '../_usage.js';
import type { JsonValue } from '../schemas.js';

/** Who is asking, as the HTTP edge knows it (used for logs, rate limits and links). */
export type RequestContext = {
  /** The base URL the request reached, e.g. `http://127.0.0.1:3000/agora` (used when no public URL is set). */
  baseUrl?: string;
  /** The client's address. */
  remoteAddress?: string;
  signal?: AbortSignal;
  /**
   * In place of `signal`: makes it when something first needs it (an LLM call, a tool). A streamed turn's signal is
   * made this way: an AbortController and its signal cost about 3 µs, more than the rest of a routine's turn.
   */
  signalWhenNeeded?: () => AbortSignal;
  /** Filled as the turn is answered, for the request log: the protocol's hash and name, and the path taken. */
  outcome?: { protocol?: string; protocolName?: string; taken?: string } | undefined;
  /** Streaming: called with each piece of the reply as it is produced (text from the LLM, a routine's yields). */
  onDelta?: (delta: JsonValue) => void;
  /** Streaming: called when the turn begins, with its conversation (null: single-round) and whether it is the first. */
  onTurn?: (conversationId: string | null, first: boolean) => void;
  /**
   * Given (zeroed) when the caller wants the turn's LLM usage reported: the tokens of each LLM call the answer makes
   * are added to it, and the model's name set.
   */
  usage?: TurnUsage;
};
