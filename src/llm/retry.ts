// The retry policy every provider shares: bounded attempts, backoff with jitter (or the server's Retry-After),
// no retry once streamed text was handed out, and one error for every failure. A provider only says which of its
// errors are transient and makes one HTTP exchange.
import { AgoraError } from '../errors.js';

/** How a provider's calls are bounded and retried. */
export type RetryOptions = {
  /** Bound on each attempt, end to end, in ms (default 60 000). */
  timeoutMs?: number;
  /** Retries after a transient failure: 429, 5xx, overload, connection error (default 2). */
  maxRetries?: number;
  /** First backoff delay in ms, doubled per retry, jittered, capped at 10 s (default 500). */
  retryBaseMs?: number;
};

/** What a provider tells the policy about a failed attempt. */
export type FailureVerdict = { retryable: boolean; retryAfterMs?: number };

/** A provider's reading of its own errors. */
export type FailureClassifier = (error: unknown) => FailureVerdict;

/** The resolved policy of {@link RetryOptions}. */
export type RetryPolicy = Required<RetryOptions>;

const MAX_RETRY_DELAY_MS = 10_000;

/** The policy with its defaults filled in. */
export function retryPolicy(options: RetryOptions = {}): RetryPolicy {
  return {
    timeoutMs: options.timeoutMs ?? 60_000,
    maxRetries: Math.max(0, options.maxRetries ?? 2),
    retryBaseMs: options.retryBaseMs ?? 500,
  };
}

/** The error every failure of a provider becomes, with its cause kept. */
export function llmUnavailable(cause: unknown): AgoraError {
  return new AgoraError('LLM_UNAVAILABLE', 'LLM unavailable', { cause });
}

/** Thrown inside an attempt when our own per-attempt bound fires (SDKs only bound the wait for headers). */
export class AttemptTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`No complete reply within ${timeoutMs} ms`);
    this.name = 'AttemptTimeoutError';
  }
}

/** One HTTP exchange of an attempt, given the signal that ends it (our bound, or the caller's abort). */
export type Attempt<T> = (signal: AbortSignal) => Promise<T>;

/**
 * Runs attempts until one succeeds, a failure is not transient, the retries are spent, the caller aborts, or
 * `mayRetry` says no (text was already handed out). Every failure is AgoraError('LLM_UNAVAILABLE').
 */
export async function withRetries<T>(
  policy: RetryPolicy,
  signal: AbortSignal | undefined,
  attempt: Attempt<T>,
  classify: FailureClassifier,
  mayRetry: () => boolean = () => true,
): Promise<T> {
  for (let number = 0; ; number++) {
    if (signal?.aborted) throw llmUnavailable(signal.reason);
    try {
      return await bounded(policy.timeoutMs, signal, attempt);
    } catch (error) {
      // Timeouts and aborts are not retried: the caller's deadline is already spent, and asking again would only
      // multiply the wait.
      const verdict: FailureVerdict = error instanceof AttemptTimeoutError ? { retryable: false } : classify(error);
      if (number >= policy.maxRetries || !verdict.retryable || signal?.aborted || !mayRetry())
        throw llmUnavailable(error);
      try {
        await sleep(retryDelay(policy, number, verdict.retryAfterMs), signal);
      } catch (abort) {
        throw llmUnavailable(abort);
      }
    }
  }
}

// One exchange, bounded by timeoutMs end to end: an SDK's `timeout` stops at the response headers, so our own
// controller also covers a body or an event stream that stops arriving.
async function bounded<T>(timeoutMs: number, signal: AbortSignal | undefined, attempt: Attempt<T>): Promise<T> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new AttemptTimeoutError(timeoutMs));
  }, timeoutMs);
  const forwardAbort = () => controller.abort(signal?.reason);
  signal?.addEventListener('abort', forwardAbort, { once: true });
  // Settles on abort even if the SDK were to miss the signal, so an attempt can never outlive its bound.
  const aborted = new Promise<never>((_, reject) => {
    controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
  });
  aborted.catch(() => {});
  try {
    const call = attempt(controller.signal);
    // The loser of the race must not surface later as an unhandled rejection.
    call.catch(() => {});
    return await Promise.race([call, aborted]);
  } catch (error) {
    if (timedOut && !(error instanceof AttemptTimeoutError)) throw new AttemptTimeoutError(timeoutMs);
    throw error;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', forwardAbort);
    controller.abort();
  }
}

function retryDelay(policy: RetryPolicy, attempt: number, retryAfter: number | undefined): number {
  if (retryAfter !== undefined) return Math.min(retryAfter, MAX_RETRY_DELAY_MS);
  const backoff = Math.min(policy.retryBaseMs * 2 ** attempt, MAX_RETRY_DELAY_MS);
  // Up to 25% jitter, so clients that failed together do not retry together.
  return backoff * (1 - Math.random() * 0.25);
}

/** The wait a 429 or 503 asks for, in ms: `retry-after-ms`, else `retry-after` in seconds or as an HTTP date. */
export function retryAfterMs(headers: Headers | undefined): number | undefined {
  const milliseconds = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds;
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/**
 * An SDK client made at the first call and kept; a failed import is retried at the next call rather than cached.
 * Importing the package (or running `agora hash`) thus never loads an SDK.
 */
export function lazyClient<T>(load: () => Promise<T>): () => Promise<T> {
  let client: Promise<T> | undefined;
  return () => {
    client ??= load();
    client.catch(() => {
      client = undefined;
    });
    return client;
  };
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
