import type Anthropic from '@anthropic-ai/sdk';
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
import { toMessageParams, toResponse, toToolParam } from './messages.js';
import { importOptional } from '../../_optional.js';

// Not claude-sonnet-4-5: the installed SDK marks it deprecated (end of life 2026-11-30) and warns on every call.
/** The Claude model used when neither the `model` option nor AGORA_MODEL names one. */
export const DEFAULT_MODEL = 'claude-sonnet-5-5';

/** Options of {@link AnthropicModel}: the model, the credentials, and the shared retry policy. */
export type AnthropicModelOptions = RetryOptions & {
  /** Model id (default {@link DEFAULT_MODEL}; `chooseModel` reads AGORA_MODEL). */
  model?: string;
  /** API key (default: the SDK reads ANTHROPIC_API_KEY). */
  apiKey?: string;
  /** Bearer token instead of a key (default: the SDK reads ANTHROPIC_AUTH_TOKEN). */
  authToken?: string;
  /** API base URL without `/v1` (default: the SDK reads ANTHROPIC_BASE_URL). */
  baseURL?: string;
  /** `max_tokens` when a request does not set it (default 4096). */
  maxTokens?: number;
  /** Use the streaming API and assemble the final message (default false). */
  stream?: boolean;
};

type Sdk = typeof import('@anthropic-ai/sdk');
type Client = { sdk: Sdk; client: Anthropic };
type RequestOptions = { signal: AbortSignal; timeout: number; maxRetries: number };

const RETRYABLE_ERROR_TYPES = new Set(['rate_limit_error', 'overloaded_error', 'api_error']);

/**
 * The Anthropic Messages API as a {@link LanguageModel}, its attempts bounded and retried by the shared policy.
 * @example const model = new AnthropicModel({ model: 'claude-sonnet-5-5', timeoutMs: 30_000 });
 */
export class AnthropicModel implements LanguageModel {
  /** The model id every request names. */
  readonly model: string;
  /** Always `anthropic`. */
  readonly provider = 'anthropic';
  readonly #connect: () => Promise<Client>;
  readonly #policy: RetryPolicy;
  readonly #maxTokens: number;
  readonly #stream: boolean;
  // The SDK's error classes, once loaded, for the policy to tell transient failures.
  #sdk: Sdk | undefined;

  constructor(options: AnthropicModelOptions = {}) {
    this.model = options.model || DEFAULT_MODEL;
    this.#policy = retryPolicy(options);
    this.#maxTokens = options.maxTokens ?? 4096;
    this.#stream = options.stream ?? false;
    // maxRetries 0: the SDK's own retries would hide attempts from our policy and multiply the timeout.
    const clientOptions = {
      ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
      ...(options.authToken !== undefined ? { authToken: options.authToken } : {}),
      ...(options.baseURL !== undefined ? { baseURL: options.baseURL } : {}),
      timeout: this.#policy.timeoutMs,
      maxRetries: 0,
    };
    this.#connect = lazyClient(() =>
      importOptional(
        '@anthropic-ai/sdk',
        'The Anthropic provider',
        () => import('@anthropic-ai/sdk'),
        'LLM_UNAVAILABLE',
      ).then((sdk) => ({ sdk, client: new sdk.default(clientOptions) })),
    );
  }

  /** Sends one request, retrying transient failures; any other failure is AgoraError('LLM_UNAVAILABLE'). */
  complete(request: LlmRequest): Promise<LlmResponse> {
    const stream = this.#stream;
    return this.#send(request, (client, params, options) =>
      stream
        ? client.messages.stream(params, options).finalMessage()
        : Promise.resolve(client.messages.create(params, options)),
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

  async #send(
    request: LlmRequest,
    call: (
      client: Anthropic,
      params: Anthropic.MessageCreateParamsNonStreaming,
      options: RequestOptions,
    ) => Promise<unknown>,
    mayRetry?: () => boolean,
  ): Promise<LlmResponse> {
    const params: Anthropic.MessageCreateParamsNonStreaming = {
      model: this.model,
      max_tokens: request.maxTokens ?? this.#maxTokens,
      messages: toMessageParams(request.messages),
      ...(request.system ? { system: request.system } : {}),
      ...(request.tools?.length ? { tools: request.tools.map(toToolParam) } : {}),
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

// Connection errors, 429, 529 and other 5xx are transient; the SDK's own timeouts and aborts are not (the caller's
// deadline is spent). Before the SDK is loaded, a failure is its import failing: not transient.
function classify(sdk: Sdk | undefined, error: unknown): FailureVerdict {
  if (!sdk || error instanceof sdk.APIUserAbortError || error instanceof sdk.APIConnectionTimeoutError)
    return { retryable: false };
  if (error instanceof sdk.APIConnectionError) return { retryable: true };
  if (!(error instanceof sdk.APIError)) return { retryable: false };
  const retryAfter = retryAfterMs(error.headers);
  const after = retryAfter === undefined ? {} : { retryAfterMs: retryAfter };
  // An `error` event mid-stream has no status, only the error's type.
  if (error.status === undefined) return { retryable: RETRYABLE_ERROR_TYPES.has(String(error.type)), ...after };
  return { retryable: error.status === 429 || error.status >= 500, ...after };
}
