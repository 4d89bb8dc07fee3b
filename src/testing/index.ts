// `agora-agents/testing`: test doubles for users' own tests. No test-runner imports, so any runner works.
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { z } from 'zod';
import { AgoraError } from '../errors.js';
import { startServer } from '../agent.js';
import { AnthropicModel, type AnthropicModelOptions } from '../llm/anthropic/model.js';
import type { LanguageModel, LlmContentBlock, LlmRequest, LlmResponse, LlmUsage } from '../llm/model.js';
import { OpenAIModel, type OpenAIModelOptions } from '../llm/openai/model.js';
import { silentLogger } from '../log.js';
import { hashText } from '../protocol/document.js';
import { encodeDataUri } from '../protocol/sources.js';
import { Receiver, type ReceiverOptions } from '../receiver.js';
import type { JsonValue, QueryResponse } from '../schemas.js';
import { FakeAnthropic, type FakeAnthropicOptions } from './fake-anthropic.js';
import { FakeOpenAI } from './fake-openai.js';

/** The fake Anthropic Messages API on loopback, with its script and request types. */
export {
  FakeAnthropic,
  type FakeAnthropicOptions,
  type FakeReply,
  type FakeRequest,
  type StreamPacing,
} from './fake-anthropic.js';
/** The fake OpenAI-compatible Chat Completions API on loopback, scripted like the fake Messages API. */
export { FakeOpenAI, type FakeOpenAIOptions } from './fake-openai.js';

/** Either fake LLM API: the same script, recorded requests and totals, each on its own wire. */
export type FakeLlm = FakeAnthropic | FakeOpenAI;

/** The model of the real SDK pointed at a fake, as `startTestAgent` makes it (`maxRetries: 0` unless given). */
export function modelForFake(
  fake: FakeLlm,
  options: { anthropic?: Omit<AnthropicModelOptions, 'baseURL'>; openai?: Omit<OpenAIModelOptions, 'baseURL'> } = {},
): LanguageModel {
  if (fake instanceof FakeOpenAI)
    return new OpenAIModel({ apiKey: 'test', maxRetries: 0, ...options.openai, baseURL: fake.url });
  return new AnthropicModel({ apiKey: 'test', maxRetries: 0, ...options.anthropic, baseURL: fake.url });
}

/** Options of {@link startTestAgent}: the receiver's options, plus the fake LLM behind it. */
export type TestAgentOptions = Omit<ReceiverOptions, 'llm'> & {
  /** The agent folder (`protocols/`, `routines/`, `tools/`). */
  dir: string;
  /** A running fake of either API (left running on close), or options to start one (closed with the agent). */
  fake?: FakeLlm | FakeAnthropicOptions;
  /** Which fake to start from options (default `anthropic`). */
  provider?: 'anthropic' | 'openai';
  /** Options of the `AnthropicModel` pointed at a fake Messages API (default `{ apiKey: 'test', maxRetries: 0 }`). */
  anthropic?: Omit<AnthropicModelOptions, 'baseURL'>;
  /** Options of the `OpenAIModel` pointed at a fake Chat Completions API (default `{ apiKey: 'test', maxRetries: 0 }`). */
  openai?: Omit<OpenAIModelOptions, 'baseURL'>;
  /** Another LLM instead of the fake's model, or `null` for an agent without LLM. */
  llm?: LanguageModel | null;
};

/** Options of one {@link TestAgent.query}. */
export type TestQueryOptions = {
  /** The protocol document: its text (anything with a line break) or a file path, resolved from the agent folder. Absent = natural language. */
  protocol?: string;
  /** Start a multiround conversation. */
  multiround?: boolean;
};

/** A receiver served on loopback with a fake LLM, as {@link startTestAgent} returns it. */
export type TestAgent = {
  receiver: Receiver;
  /** The server's base URL, e.g. `http://127.0.0.1:53117`. */
  url: string;
  fake: FakeLlm;
  /** `POST /` over HTTP; a protocol is sent by its hex hash with a `data:` source. Resolves to the reply, success or failure. */
  query(body: JsonValue, options?: TestQueryOptions): Promise<QueryResponse>;
  /** `POST /conversations/:id` over HTTP: the next turn of a multiround conversation. */
  followUp(conversationId: string, body: JsonValue): Promise<QueryResponse>;
  /** Stops the server, the receiver and the fake it started. */
  close(): Promise<void>;
};

// Our own server answers, but a reply is still parsed, never trusted (a broken handler must fail the test clearly).
const replySchema = z.union([
  z.object({
    status: z.literal('success'),
    body: z.unknown(),
    conversationId: z.string().optional(),
    conversationExpires: z.number().optional(),
  }),
  z.object({ status: z.literal('failure'), error: z.string() }),
]);

/**
 * Starts a receiver for an agent folder on a free loopback port, its LLM the real SDK against a {@link FakeAnthropic}
 * or a {@link FakeOpenAI}.
 * @example
 * const agent = await startTestAgent({ dir, fake: { replies: ['Hello!'] } });
 * expect(await agent.query('Hi')).toEqual({ status: 'success', body: 'Hello!' });
 * await agent.close();
 */
export async function startTestAgent(options: TestAgentOptions): Promise<TestAgent> {
  const { fake: fakeOption, provider, anthropic, openai, llm: llmOption, ...receiverOptions } = options;
  const given = fakeOption instanceof FakeAnthropic || fakeOption instanceof FakeOpenAI ? fakeOption : undefined;
  const ownsFake = given === undefined;
  const startOptions = given ? {} : (fakeOption as FakeAnthropicOptions | undefined);
  const fake =
    given ?? (provider === 'openai' ? await FakeOpenAI.start(startOptions) : await FakeAnthropic.start(startOptions));
  const logger = receiverOptions.logger ?? silentLogger;
  const llm =
    llmOption === null
      ? undefined
      : (llmOption ?? modelForFake(fake, { ...(anthropic ? { anthropic } : {}), ...(openai ? { openai } : {}) }));
  let receiver: Receiver | undefined;
  try {
    receiver = await Receiver.start({ watch: false, ...receiverOptions, logger, llm: llm ?? null });
    const server = await startServer(receiver, { port: 0, host: '127.0.0.1', logger });
    const url = server.url;
    const dir = receiver.dir;
    const started = receiver;
    return {
      receiver: started,
      url,
      fake,
      async query(body, queryOptions = {}) {
        const request: Record<string, unknown> = { body };
        if (queryOptions.protocol !== undefined) {
          const text = queryOptions.protocol.includes('\n')
            ? queryOptions.protocol
            : await readFile(resolve(dir, queryOptions.protocol), 'utf8');
          request.protocolHash = hashText(text);
          request.protocolSources = [encodeDataUri(text)];
        }
        if (queryOptions.multiround) request.multiround = true;
        return post(`${url}/`, request);
      },
      followUp(conversationId, body) {
        return post(`${url}/conversations/${encodeURIComponent(conversationId)}`, { body });
      },
      async close() {
        await server.close();
        await started.close();
        if (ownsFake) await fake.close();
      },
    };
  } catch (error) {
    await receiver?.close();
    if (ownsFake) await fake.close();
    throw error;
  }
}

async function post(url: string, request: unknown): Promise<QueryResponse> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(request),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new AgoraError('PEER_FAILURE', `POST ${url}: HTTP ${response.status}, not JSON: ${text.slice(0, 200)}`, {
      status: response.status,
    });
  }
  const parsed = replySchema.safeParse(json);
  if (!parsed.success)
    throw new AgoraError(
      'PEER_FAILURE',
      `POST ${url}: HTTP ${response.status}, not an Agora reply: ${z.prettifyError(parsed.error)}`,
      { status: response.status },
    );
  return parsed.data as QueryResponse;
}

/** One reply of a {@link scriptedModel}: text, tool calls, an error to throw, or a function of the request. */
export type ScriptedReply =
  | string
  | { text?: string; toolUse?: { name: string; input: unknown; id?: string }[]; usage?: Partial<LlmUsage> }
  | Error
  | ((request: LlmRequest) => ScriptedReply | Promise<ScriptedReply>);

/** A {@link LanguageModel} answering from a script, in process, with what it was asked. */
export type ScriptedModel = LanguageModel & {
  /** Every request received, in order (the messages as they were at the call). */
  readonly requests: LlmRequest[];
  /** Appends replies to the script. */
  push(...replies: ScriptedReply[]): void;
};

/**
 * A tiny in-process LLM for fast unit tests: replies in order, usage 10 in / 5 out unless given; an exhausted script or
 * an `Error` reply throws `LLM unavailable`.
 * @example const llm = scriptedModel(['Hello!', { toolUse: [{ name: 'get_forecast', input: { city: 'Paris' } }] }]);
 */
export function scriptedModel(replies: ScriptedReply[] = []): ScriptedModel {
  const script = [...replies];
  const requests: LlmRequest[] = [];
  let ids = 0;
  return {
    model: 'scripted',
    requests,
    push(...more) {
      script.push(...more);
    },
    async complete(request) {
      // A snapshot: the tool loop appends to its array after the call.
      requests.push({ ...request, messages: [...request.messages] });
      if (request.signal?.aborted)
        throw new AgoraError('LLM_UNAVAILABLE', 'LLM unavailable', { cause: request.signal.reason });
      let reply = script.shift();
      if (reply === undefined)
        throw new AgoraError('LLM_UNAVAILABLE', 'LLM unavailable', {
          cause: new Error('scriptedModel: the reply script ran out'),
        });
      for (let depth = 0; typeof reply === 'function' && depth < 16; depth++) reply = await reply(request);
      if (typeof reply === 'function')
        throw new AgoraError('LLM_UNAVAILABLE', 'LLM unavailable', {
          cause: new Error('scriptedModel: reply functions nested too deeply'),
        });
      if (reply instanceof Error) throw new AgoraError('LLM_UNAVAILABLE', 'LLM unavailable', { cause: reply });
      const message = typeof reply === 'string' ? { text: reply } : reply;
      const content: LlmContentBlock[] = [];
      if (message.text !== undefined && message.text !== '') content.push({ type: 'text', text: message.text });
      const toolCalls = (message.toolUse ?? []).map((call) => ({
        id: call.id ?? `call_scripted${++ids}`,
        name: call.name,
        input: call.input ?? {},
      }));
      for (const call of toolCalls) content.push({ type: 'tool-call', ...call });
      const response: LlmResponse = {
        text: message.text ?? '',
        toolCalls,
        content,
        stopReason: toolCalls.length ? 'tool-calls' : 'stop',
        usage: { inputTokens: message.usage?.inputTokens ?? 10, outputTokens: message.usage?.outputTokens ?? 5 },
        model: 'scripted',
      };
      return response;
    },
  };
}
