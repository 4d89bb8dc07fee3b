// The network's LLM and what it costs. Every agent's LLM calls go through the real `openai` SDK (OpenAIModel) to one
// FakeOpenAI on loopback, whose replies come from the deterministic brain of ../weather/brain.ts (it knows no
// domain: all it knows is in the prompt, as for a real model). The brain reads Anthropic-shaped requests, so each
// chat request is translated for it here; the reply goes back on the Chat Completions wire.
//
// Tokens are counted with gpt-tokenizer's gpt-4o encoding (o200k_base), on the request as the model would see it
// (the chat messages, tool calls and tool results, plus the tools' JSON schemas, which OpenAI injects into the
// prompt). Completions: the brain says only what a task needs; a real model says a little more around it (a
// sentence before a tool call's answer, a paragraph around code). Each reply's tokens are the tokenizer's count of
// the brain's text plus a fixed allowance per kind of prompt (`VERBOSITY`), stated here so anyone can change it.
import { encodeChat, countTokens } from 'gpt-tokenizer/model/gpt-4o';
import { OpenAIModel, type LanguageModel } from 'agora-agents';
import { FakeOpenAI, type FakeReply, type FakeRequest } from 'agora-agents/testing';
import { brain, PROMPT_MARKERS } from '../weather/brain.js';

/** The model the prices and the tokenizer are for. */
export const MODEL = 'gpt-4o';

/**
 * Dollars per million tokens for {@link MODEL} (gpt-4o-2024-08-06) on OpenAI's price list, standard tier, without
 * the cached-input discount: taken 2026-11-29 from the list as published since 2024-10 (this machine has no network;
 * check https://openai.com/api/pricing before quoting dollars).
 */
export const PRICES = { input: 2.5, output: 10, taken: '2026-11-29' } as const;

/** The kinds of prompts the framework sends, as the brain recognises them. */
export type PromptKind = keyof typeof PROMPT_MARKERS;

/** Tokens a real model adds around what the brain says, by kind of prompt (see the file's header). */
export const VERBOSITY: Record<PromptKind, number> = {
  naturalLanguageQuery: 20,
  answerNaturalLanguage: 30,
  readReply: 0,
  protocolBody: 0,
  answerUnderProtocol: 0,
  judgeFit: 40,
  suitability: 40,
  proposeProtocol: 80,
  answerNegotiation: 80,
  writeRoutine: 150,
  writeTaskRoutine: 150,
  writeCheckQueries: 20,
};

/** One LLM call as billed: its kind, tokens in and out, and dollars. */
export type Bill = { kind: PromptKind | 'unknown'; input: number; output: number; dollars: number };

/** Calls, tokens in and out, and dollars, summed. */
export type Sums = { calls: number; input: number; output: number; dollars: number };

/** Every call of a run, in order, with sums since a mark. */
export class Ledger {
  readonly bills: Bill[] = [];

  /** The bills since `mark` (an index into `bills`), summed. */
  since(mark: number): Sums & { kinds: Map<string, Sums> } {
    const kinds = new Map<string, Sums>();
    const total: Sums = { calls: 0, input: 0, output: 0, dollars: 0 };
    for (const bill of this.bills.slice(mark)) {
      const entry = kinds.get(bill.kind) ?? { calls: 0, input: 0, output: 0, dollars: 0 };
      for (const sums of [entry, total]) {
        sums.calls += 1;
        sums.input += bill.input;
        sums.output += bill.output;
        sums.dollars += bill.dollars;
      }
      kinds.set(bill.kind, entry);
    }
    return { ...total, kinds };
  }
}

/** Dollars for tokens in and out at {@link PRICES}. */
export function dollars(input: number, output: number): number {
  return (input * PRICES.input + output * PRICES.output) / 1_000_000;
}

type ChatMessage = { role: string; content?: unknown; tool_calls?: ToolCall[]; tool_call_id?: string };
type ToolCall = { id: string; function: { name: string; arguments: string } };

const text = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((part: { text?: string }) => part.text ?? '').join('')
      : '';

/** The request as the brain reads it: Anthropic messages (tool_use and tool_result blocks) and tools. */
function forBrain(request: FakeRequest): FakeRequest {
  const messages: { role: 'user' | 'assistant'; content: unknown }[] = [];
  for (const message of (request.body.messages ?? []) as ChatMessage[]) {
    if (message.role === 'system' || message.role === 'developer') continue;
    if (message.role === 'tool') {
      const content = text(message.content);
      const block = {
        type: 'tool_result',
        tool_use_id: message.tool_call_id,
        content,
        // The chat wire has no error flag: the framework writes a failed tool's result as its error's text.
        ...(/^\w*Error: /.test(content) ? { is_error: true } : {}),
      };
      const last = messages.at(-1);
      if (last?.role === 'user' && Array.isArray(last.content)) last.content.push(block);
      else messages.push({ role: 'user', content: [block] });
    } else if (message.role === 'assistant') {
      const blocks: unknown[] = text(message.content) ? [{ type: 'text', text: text(message.content) }] : [];
      for (const call of message.tool_calls ?? [])
        blocks.push({
          type: 'tool_use',
          id: call.id,
          name: call.function.name,
          input: JSON.parse(call.function.arguments),
        });
      messages.push({ role: 'assistant', content: blocks });
    } else messages.push({ role: 'user', content: text(message.content) });
  }
  const tools = (
    (request.body.tools ?? []) as { function: { name: string; description?: string; parameters?: unknown } }[]
  ).map(({ function: fn }) => ({ name: fn.name, description: fn.description ?? '', input_schema: fn.parameters }));
  return { ...request, body: { ...request.body, messages, tools } };
}

/** Tokens of a chat request as gpt-4o reads it: its messages in the chat format, and its tools' schemas. */
function inputTokens(request: FakeRequest): number {
  const chat = ((request.body.messages ?? []) as ChatMessage[]).map((message) => ({
    role: message.role === 'tool' ? 'user' : message.role,
    content:
      text(message.content) +
      (message.tool_calls ?? []).map((call) => `${call.function.name}(${call.function.arguments})`).join('\n'),
  }));
  const tools = request.body.tools ? countTokens(JSON.stringify(request.body.tools)) : 0;
  return encodeChat(chat as never, MODEL).length + tools;
}

function outputText(reply: Exclude<FakeReply, (request: FakeRequest) => unknown>): string | undefined {
  if (typeof reply === 'string') return reply;
  if ('text' in reply || 'toolUse' in reply)
    return (
      (reply.text ?? '') + (reply.toolUse ?? []).map((call) => `${call.name}(${JSON.stringify(call.input)})`).join('')
    );
  return undefined;
}

/** The LLM of every agent in a run, the fake API behind it, and the ledger of what it billed. */
export type NetworkLlm = { model(): LanguageModel; ledger: Ledger; fake: FakeOpenAI; close(): Promise<void> };

/** Starts the fake API; `latencyMs` is how long each call takes before it is answered (a real model's time). */
export async function startNetworkLlm(options: { latencyMs: number }): Promise<NetworkLlm> {
  const ledger = new Ledger();
  const reply = async (request: FakeRequest): Promise<FakeReply> => {
    const kind =
      (Object.keys(PROMPT_MARKERS) as PromptKind[]).find((key) => request.system.includes(PROMPT_MARKERS[key])) ??
      'unknown';
    const answer = brain(forBrain(request));
    if (options.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, options.latencyMs));
    if (typeof answer === 'function') return answer;
    const said = outputText(answer);
    if (said === undefined) return answer;
    const input = inputTokens(request);
    const output = countTokens(said) + (kind === 'unknown' ? 0 : VERBOSITY[kind]);
    ledger.bills.push({ kind, input, output, dollars: dollars(input, output) });
    const message = typeof answer === 'string' ? { text: answer } : answer;
    return { ...message, usage: { inputTokens: input, outputTokens: output } };
  };
  const fake = await FakeOpenAI.start({ fallback: reply });
  return {
    model: () => new OpenAIModel({ baseURL: fake.url, apiKey: 'fake', maxRetries: 0, model: MODEL }),
    ledger,
    fake,
    close: () => fake.close(),
  };
}
