import type Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';
import { AgoraError } from '../errors.js';
import type { LanguageModel, LlmContentBlock, LlmMessage, LlmRequest, LlmResponse, LlmToolSpec } from './toolformer.js';

// Not claude-sonnet-4-5: the installed SDK marks it deprecated (end of life 2026-11-30) and warns on every call.
/** The model used when neither the `model` option nor AGORA_MODEL names one. */
export const DEFAULT_MODEL = 'claude-sonnet-5-5';

/** Options of {@link AnthropicModel}. */
export type AnthropicModelOptions = {
  /** Model id (default: AGORA_MODEL, else {@link DEFAULT_MODEL}). */
  model?: string;
  /** API key (default: the SDK reads ANTHROPIC_API_KEY). */
  apiKey?: string;
  /** API base URL without `/v1` (default: the SDK reads ANTHROPIC_BASE_URL). */
  baseURL?: string;
  /** Bound on each attempt, in ms (default 60 000). */
  timeoutMs?: number;
  /** Retries after a 429, 529, other 5xx or connection error (default 2). */
  maxRetries?: number;
  /** First backoff delay in ms, doubled per retry, jittered, capped at 10 s (default 500). */
  retryBaseMs?: number;
  /** `max_tokens` when a request does not set it (default 4096). */
  maxTokens?: number;
  /** Use the streaming API and assemble the final message (default false). */
  stream?: boolean;
};

const MAX_RETRY_DELAY_MS = 10_000;
const RETRYABLE_ERROR_TYPES = new Set(['rate_limit_error', 'overloaded_error', 'api_error']);

// Replies are parsed, never trusted: a proxy or a fake may answer anything with status 200.
const TextBlockSchema = z.object({ type: z.literal('text'), text: z.string() });
const ToolUseBlockSchema = z.object({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.unknown() });
const MessageSchema = z.object({
  model: z.string(),
  content: z.array(z.looseObject({ type: z.string() })),
  stop_reason: z.string().nullish(),
  usage: z.looseObject({ input_tokens: z.number(), output_tokens: z.number() }),
});

type Sdk = typeof import('@anthropic-ai/sdk');
type Client = { sdk: Sdk; client: Anthropic };
/** One HTTP exchange of an attempt: the plain or the streaming API. */
type Call = (client: Anthropic, params: Anthropic.MessageCreateParamsNonStreaming, options: { signal: AbortSignal; timeout: number; maxRetries: number }) => Promise<unknown>;

/** Thrown inside an attempt when our own per-attempt bound fires (the SDK only bounds the wait for headers). */
class AttemptTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`No complete reply within ${timeoutMs} ms`);
    this.name = 'AttemptTimeoutError';
  }
}

/**
 * The Anthropic Messages API as a {@link LanguageModel}, with bounded attempts and our own retry policy.
 * @example const model = new AnthropicModel({ model: 'claude-sonnet-5-5', timeoutMs: 30_000 });
 */
export class AnthropicModel implements LanguageModel {
  /** The model id every request names. */
  readonly model: string;
  readonly #clientOptions: ConstructorParameters<Sdk['default']>[0];
  // The SDK is imported at the first call, so importing this package (or running `agora hash`) never loads it.
  #client: Promise<Client> | undefined;
  readonly #timeoutMs: number;
  readonly #maxRetries: number;
  readonly #retryBaseMs: number;
  readonly #maxTokens: number;
  readonly #stream: boolean;

  constructor(options: AnthropicModelOptions = {}) {
    this.model = options.model || process.env.AGORA_MODEL || DEFAULT_MODEL;
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.#maxRetries = Math.max(0, options.maxRetries ?? 2);
    this.#retryBaseMs = options.retryBaseMs ?? 500;
    this.#maxTokens = options.maxTokens ?? 4096;
    this.#stream = options.stream ?? false;
    // maxRetries 0: the SDK's own retries would hide attempts from our policy and multiply the timeout.
    this.#clientOptions = {
      ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
      ...(options.baseURL !== undefined ? { baseURL: options.baseURL } : {}),
      timeout: this.#timeoutMs,
      maxRetries: 0,
    };
  }

  #connect(): Promise<Client> {
    this.#client ??= import('@anthropic-ai/sdk').then((sdk) => ({ sdk, client: new sdk.default(this.#clientOptions) }));
    // A failed import is retried at the next call rather than cached.
    this.#client.catch(() => {
      this.#client = undefined;
    });
    return this.#client;
  }

  /** Sends one request, retrying transient failures; any other failure is AgoraError('LLM_UNAVAILABLE'). */
  complete(request: LlmRequest): Promise<LlmResponse> {
    const stream = this.#stream;
    return this.#send(request, (client, params, options) =>
      stream ? client.messages.stream(params, options).finalMessage() : Promise.resolve(client.messages.create(params, options)),
    );
  }

  /**
   * Sends one request on the streaming API, handing out the reply's text as it comes. Transient failures are
   * retried only while no text was handed out (a retry would repeat it); aborting `request.signal` closes the
   * connection at once, so no tokens are paid for nobody.
   */
  stream(request: LlmRequest, onText: (text: string) => void): Promise<LlmResponse> {
    let handedOut = false;
    return this.#send(
      request,
      (client, params, options) => {
        const stream = client.messages.stream(params, options);
        stream.on('text', (text) => {
          handedOut = true;
          onText(text);
        });
        return stream.finalMessage();
      },
      () => !handedOut,
    );
  }

  async #send(request: LlmRequest, call: Call, mayRetry: () => boolean = () => true): Promise<LlmResponse> {
    const params = this.#params(request);
    let connection: Client;
    try {
      connection = await this.#connect();
    } catch (error) {
      throw unavailable(error);
    }
    const { sdk } = connection;
    for (let attempt = 0; ; attempt++) {
      if (request.signal?.aborted) throw unavailable(request.signal.reason);
      let reply: unknown;
      try {
        reply = await this.#attempt(connection.client, params, request.signal, call);
      } catch (error) {
        if (attempt >= this.#maxRetries || !isRetryable(sdk, error) || request.signal?.aborted || !mayRetry()) throw unavailable(error);
        try {
          await sleep(this.#retryDelay(sdk, attempt, error), request.signal);
        } catch (abort) {
          throw unavailable(abort);
        }
        continue;
      }
      return toResponse(reply);
    }
  }

  #params(request: LlmRequest): Anthropic.MessageCreateParamsNonStreaming {
    return {
      model: this.model,
      max_tokens: request.maxTokens ?? this.#maxTokens,
      messages: request.messages.map(toMessageParam),
      ...(request.system ? { system: request.system } : {}),
      ...(request.tools?.length ? { tools: request.tools.map(toToolParam) } : {}),
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    };
  }

  // One HTTP exchange, bounded by timeoutMs end to end: the SDK's `timeout` stops at the response headers,
  // so our own controller also covers a body or an event stream that stops arriving.
  async #attempt(client: Anthropic, params: Anthropic.MessageCreateParamsNonStreaming, signal: AbortSignal | undefined, send: Call): Promise<unknown> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new AttemptTimeoutError(this.#timeoutMs));
    }, this.#timeoutMs);
    const forwardAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', forwardAbort, { once: true });
    // Settles on abort even if the SDK were to miss the signal, so an attempt can never outlive its bound.
    const aborted = new Promise<never>((_, reject) => {
      controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
    });
    aborted.catch(() => {});
    try {
      const requestOptions = { signal: controller.signal, timeout: this.#timeoutMs, maxRetries: 0 };
      const call = send(client, params, requestOptions);
      // The loser of the race must not surface later as an unhandled rejection.
      call.catch(() => {});
      return await Promise.race([call, aborted]);
    } catch (error) {
      if (timedOut && !(error instanceof AttemptTimeoutError)) throw new AttemptTimeoutError(this.#timeoutMs);
      throw error;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', forwardAbort);
      controller.abort();
    }
  }

  #retryDelay(sdk: Sdk, attempt: number, error: unknown): number {
    const retryAfter = error instanceof sdk.APIError ? retryAfterMs(error.headers) : undefined;
    if (retryAfter !== undefined) return Math.min(retryAfter, MAX_RETRY_DELAY_MS);
    const backoff = Math.min(this.#retryBaseMs * 2 ** attempt, MAX_RETRY_DELAY_MS);
    // Up to 25% jitter, so clients that failed together do not retry together.
    return backoff * (1 - Math.random() * 0.25);
  }
}

/** True when an API key is configured in the environment (ANTHROPIC_API_KEY, or ANTHROPIC_AUTH_TOKEN). */
export function hasAnthropicKey(env: NodeJS.ProcessEnv = process.env): boolean {
  // ANTHROPIC_AUTH_TOKEN counts too: the SDK authenticates with it when no key is set.
  return Boolean(env.ANTHROPIC_API_KEY?.trim() || env.ANTHROPIC_AUTH_TOKEN?.trim());
}

/**
 * The LLM the environment configures, as `agora serve` reads it: Claude (AGORA_MODEL, else the default model) when
 * ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN is set, else none. The SDK is still only imported at the first call.
 * @example const llm = modelFromEnvironment(); // undefined without a key
 */
export function modelFromEnvironment(env: NodeJS.ProcessEnv = process.env, model?: string): AnthropicModel | undefined {
  if (!hasAnthropicKey(env)) return undefined;
  return new AnthropicModel(model ? { model } : {});
}

function unavailable(cause: unknown): AgoraError {
  return new AgoraError('LLM_UNAVAILABLE', 'LLM unavailable', { cause });
}

// Timeouts and aborts are not retried: the caller's deadline is already spent, and asking again would only
// multiply the wait. Connection errors, 429, 529 and other 5xx are transient.
function isRetryable(sdk: Sdk, error: unknown): boolean {
  if (error instanceof AttemptTimeoutError || error instanceof sdk.APIUserAbortError || error instanceof sdk.APIConnectionTimeoutError) return false;
  if (error instanceof sdk.APIConnectionError) return true;
  if (!(error instanceof sdk.APIError)) return false;
  if (error.status === undefined) return RETRYABLE_ERROR_TYPES.has(String(error.type)); // an `error` event mid-stream
  return error.status === 429 || error.status >= 500;
}

function retryAfterMs(headers: Headers | undefined): number | undefined {
  const milliseconds = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds;
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function toMessageParam(message: LlmMessage): Anthropic.MessageParam {
  if (typeof message.content === 'string') return { role: message.role, content: message.content };
  // The API rejects empty text blocks, which a reply of only tool calls may carry.
  const blocks = message.content.filter((block) => block.type !== 'text' || block.text !== '');
  const content = blocks.length ? blocks : message.content;
  return { role: message.role, content: content.map(toBlockParam) } as Anthropic.MessageParam;
}

function toBlockParam(block: LlmContentBlock): Anthropic.ContentBlockParam {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'tool_use':
      return { type: 'tool_use', id: block.id, name: block.name, input: block.input };
    case 'tool_result':
      return { type: 'tool_result', tool_use_id: block.tool_use_id, content: block.content, ...(block.is_error ? { is_error: true } : {}) };
  }
}

function toToolParam(tool: LlmToolSpec): Anthropic.Tool {
  return { name: tool.name, description: tool.description, input_schema: { ...tool.inputSchema, type: 'object' } };
}

function toResponse(reply: unknown): LlmResponse {
  const parsed = MessageSchema.safeParse(reply);
  if (!parsed.success) throw unavailable(new Error(`Malformed reply from the Messages API: ${z.prettifyError(parsed.error)}`));
  const message = parsed.data;
  const content: LlmContentBlock[] = [];
  for (const block of message.content) {
    // Other block types (thinking, server tools) are not part of the seam and are left out.
    const schema = block.type === 'text' ? TextBlockSchema : block.type === 'tool_use' ? ToolUseBlockSchema : undefined;
    if (!schema) continue;
    const checked = schema.safeParse(block);
    if (!checked.success) throw unavailable(new Error(`Malformed ${block.type} block from the Messages API: ${z.prettifyError(checked.error)}`));
    content.push(checked.data as LlmContentBlock);
  }
  const toolCalls = content.flatMap((block) => (block.type === 'tool_use' ? [{ id: block.id, name: block.name, input: block.input }] : []));
  const text = content.map((block) => (block.type === 'text' ? block.text : '')).join('');
  return {
    text,
    toolCalls,
    content,
    stopReason: message.stop_reason ?? 'end_turn',
    usage: { inputTokens: message.usage.input_tokens, outputTokens: message.usage.output_tokens },
    model: message.model,
  };
}
