import type OpenAI from 'openai';
import type { LanguageModel, LlmRequest, LlmResponse } from '../model.js';
import {
  lazyClient,
  retryAfterMs,
  retryPolicy,
  withRetries,
  type FailureVerdict,
  type RetryOptions,
  type RetryPolicy,
} from '../retry.js';
import { toChatMessages, toChatTool, toResponse } from './chat.js';
import { importOptional } from '../../_optional.js';

/** The OpenAI model used when neither the `model` option nor AGORA_MODEL names one. */
export const DEFAULT_OPENAI_MODEL = 'gpt-4.1-mini';

/** Options of {@link OpenAIModel}: the model, the server, and the shared retry policy. */
export type OpenAIModelOptions = RetryOptions & {
  /** Model id (default {@link DEFAULT_OPENAI_MODEL}; for Ollama, vLLM or LM Studio, the name they serve). */
  model?: string;
  /** API key (local servers need none: a placeholder is sent when a base URL is given without one). */
  apiKey?: string;
  /** Base URL with its `/v1`, e.g. `http://localhost:11434/v1` for Ollama (default: api.openai.com). */
  baseURL?: string;
  /** Token bound when a request does not set one (default 4096). */
  maxTokens?: number;
  /** Use the streaming API and assemble the final reply (default false). */
  stream?: boolean;
};

type Sdk = typeof import('openai');
type Client = { sdk: Sdk; client: OpenAI };
type Params = OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
type RequestOptions = { signal: AbortSignal; timeout: number; maxRetries: number };

/**
 * OpenAI-compatible Chat Completions (OpenAI, Ollama, vLLM, LM Studio…) as a {@link LanguageModel}, through the
 * official `openai` SDK, its attempts bounded and retried by the shared policy.
 * @example const model = new OpenAIModel({ baseURL: 'http://localhost:11434/v1', model: 'llama3.2' });
 */
export class OpenAIModel implements LanguageModel {
  /** The model id every request names. */
  readonly model: string;
  /** Always `openai` (the wire, whoever serves it). */
  readonly provider = 'openai';
  readonly #connect: () => Promise<Client>;
  readonly #policy: RetryPolicy;
  readonly #maxTokens: number;
  readonly #stream: boolean;
  // api.openai.com wants `max_completion_tokens` (newer models refuse `max_tokens`); compatible servers know
  // `max_tokens`.
  readonly #tokenField: 'max_tokens' | 'max_completion_tokens';
  // The SDK's error classes, once loaded, for the policy to tell transient failures.
  #sdk: Sdk | undefined;

  constructor(options: OpenAIModelOptions = {}) {
    this.model = options.model || DEFAULT_OPENAI_MODEL;
    this.#policy = retryPolicy(options);
    this.#maxTokens = options.maxTokens ?? 4096;
    this.#stream = options.stream ?? false;
    this.#tokenField = options.baseURL === undefined ? 'max_completion_tokens' : 'max_tokens';
    // maxRetries 0: the SDK's own retries would hide attempts from our policy and multiply the timeout.
    const clientOptions = {
      ...(options.apiKey !== undefined
        ? { apiKey: options.apiKey }
        : options.baseURL !== undefined
          ? { apiKey: 'none' }
          : {}),
      ...(options.baseURL !== undefined ? { baseURL: options.baseURL } : {}),
      timeout: this.#policy.timeoutMs,
      maxRetries: 0,
    };
    this.#connect = lazyClient(() =>
      importOptional('openai', 'The OpenAI provider', () => import('openai'), 'LLM_UNAVAILABLE').then((sdk) => ({
        sdk,
        client: new sdk.default(clientOptions),
      })),
    );
  }

  /** Sends one request, retrying transient failures; any other failure is AgoraError('LLM_UNAVAILABLE'). */
  complete(request: LlmRequest): Promise<LlmResponse> {
    const stream = this.#stream;
    return this.#send(request, (client, params, options) =>
      stream
        ? streamed(client, params, options).finalChatCompletion()
        : Promise.resolve(client.chat.completions.create(params, options)),
    );
  }

  /**
   * Sends one request on the streaming API, handing out the reply's text as it comes. Transient failures are
   * retried only while no text was handed out (a retry would repeat it); aborting `request.signal` closes the
   * connection at once.
   */
  stream(request: LlmRequest, onText: (text: string) => void): Promise<LlmResponse> {
    let handedOut = false;
    return this.#send(
      request,
      (client, params, options) => {
        const stream = streamed(client, params, options);
        stream.on('content', (delta) => {
          if (!delta) return;
          handedOut = true;
          onText(delta);
        });
        return stream.finalChatCompletion();
      },
      () => !handedOut,
    );
  }

  async #send(
    request: LlmRequest,
    call: (client: OpenAI, params: Params, options: RequestOptions) => Promise<unknown>,
    mayRetry?: () => boolean,
  ): Promise<LlmResponse> {
    const params: Params = {
      model: this.model,
      messages: toChatMessages(request.system, request.messages),
      [this.#tokenField]: request.maxTokens ?? this.#maxTokens,
      ...(request.tools?.length ? { tools: request.tools.map(toChatTool) } : {}),
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    };
    const reply = await withRetries(
      this.#policy,
      request.signal,
      async (signal) => {
        const { sdk, client } = await this.#connect();
        this.#sdk = sdk;
        return call(client, params, { signal, timeout: this.#policy.timeoutMs, maxRetries: 0 });
      },
      (error) => classify(this.#sdk, error),
      mayRetry,
    );
    return toResponse(reply);
  }
}

// The streaming API, asking for the usage chunk at the end so a streamed call is counted like any other.
function streamed(client: OpenAI, params: Params, options: RequestOptions) {
  return client.chat.completions.stream({ ...params, stream: true, stream_options: { include_usage: true } }, options);
}

// Connection errors, 429 and 5xx are transient; the SDK's own timeouts and aborts are not (the caller's deadline is
// spent). Before the SDK is loaded, a failure is its import failing: not transient.
function classify(sdk: Sdk | undefined, error: unknown): FailureVerdict {
  if (!sdk || error instanceof sdk.APIUserAbortError || error instanceof sdk.APIConnectionTimeoutError)
    return { retryable: false };
  if (error instanceof sdk.APIConnectionError) return { retryable: true };
  if (!(error instanceof sdk.APIError)) return { retryable: false };
  const retryAfter = retryAfterMs(error.headers);
  const after = retryAfter === undefined ? {} : { retryAfterMs: retryAfter };
  // An error in the middle of a stream has no status: a server error, worth one more try while nothing was shown.
  if (error.status === undefined) return { retryable: true, ...after };
  return { retryable: error.status === 429 || error.status >= 500, ...after };
}
