// The neutral LLM seam: what the framework says to a language model and what it hears back, in no provider's
// wire shapes. Each provider (./anthropic/, ./openai/) maps its own API to these types and back.

/** A content block of an LLM message: text, a call of one of our tools, or that call's result. */
export type LlmContentBlock =
  | { type: 'text'; text: string }
  | { type: 'tool-call'; id: string; name: string; input: unknown }
  | { type: 'tool-result'; toolCallId: string; content: string; isError?: boolean };

/** A message of an LLM conversation. */
export type LlmMessage = { role: 'user' | 'assistant'; content: string | LlmContentBlock[] };

/** A tool as the LLM sees it: its name, what it does, and the JSON Schema of its input. */
export type LlmToolSpec = { name: string; description: string; inputSchema: Record<string, unknown> };

/** Token counts of one call, as the provider reported them. */
export type LlmUsage = { inputTokens: number; outputTokens: number };

/**
 * Why a reply ended: its natural end, to call tools, at the token bound, stopped by the provider's content filter,
 * or for another reason a provider gives.
 */
export type LlmStopReason = 'stop' | 'tool-calls' | 'length' | 'content-filter' | 'other';

/** One call of our tools that a reply asks for. */
export type LlmToolCall = { id: string; name: string; input: unknown };

/** What a call is for: the framework's own task, a seam a scripted model (the offline one, a test's) reads instead of prompt text. */
export type LlmPurpose =
  | 'answer'
  | 'protocol-answer'
  | 'suitability'
  | 'negotiate-propose'
  | 'negotiate-respond'
  | 'routine'
  | 'task-routine'
  | 'test-queries'
  | 'task'
  | 'routing';

/** The purpose of a call and the facts it is about (the task negotiated, the protocol answered). */
export type LlmIntent = {
  purpose: LlmPurpose;
  task?: { name: string; description: string };
  protocol?: { name: string; hash: string };
};

/** One request to the LLM. */
export type LlmRequest = {
  /** What the call is for; providers ignore it, scripted models answer by it. */
  intent?: LlmIntent;
  system: string;
  messages: LlmMessage[];
  tools?: LlmToolSpec[];
  maxTokens?: number;
  /** Sampling temperature; 0 for checks and code. */
  temperature?: number;
  /** Aborts the call. */
  signal?: AbortSignal;
};

/** One reply of the LLM: its text, the tool calls it asks for, and what it cost. */
export type LlmResponse = {
  text: string;
  toolCalls: LlmToolCall[];
  /** The assistant message as returned, to append to the conversation before tool results. */
  content: LlmContentBlock[];
  stopReason: LlmStopReason;
  usage: LlmUsage;
  model: string;
};

/**
 * The one LLM seam: a conversation with a system prompt, messages and tools, returning text or tool calls.
 * Implementations throw AgoraError('LLM_UNAVAILABLE') on any failure they cannot recover from.
 */
export interface LanguageModel {
  /** The model id every request names. */
  readonly model: string;
  /** Who serves it (`anthropic`, `openai`, …), for banners and metrics; absent for a model of the user's own. */
  readonly provider?: string;
  complete(request: LlmRequest): Promise<LlmResponse>;
  /**
   * Like `complete`, calling `onText` with each piece of the reply's text as it is generated. Optional: a model
   * that cannot stream leaves it out, and callers fall back to `complete`. Once text was handed out, a failure is
   * not retried (the pieces would repeat).
   */
  stream?(request: LlmRequest, onText: (text: string) => void): Promise<LlmResponse>;
}

/** Where LLM usage is reported (the metrics registry implements it). */
export type UsageSink = (usage: LlmUsage & { model: string }) => void;

/** A response assembled from its blocks: the text joined, the tool calls listed, in the order the blocks came. */
export function responseOf(
  content: LlmContentBlock[],
  rest: { stopReason: LlmStopReason; usage: LlmUsage; model: string },
): LlmResponse {
  const toolCalls = content.flatMap((block) =>
    block.type === 'tool-call' ? [{ id: block.id, name: block.name, input: block.input }] : [],
  );
  const text = content.map((block) => (block.type === 'text' ? block.text : '')).join('');
  return { text, toolCalls, content, ...rest };
}
