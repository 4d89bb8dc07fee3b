// The mapping between the neutral LLM seam and OpenAI-compatible Chat Completions: requests out, replies parsed back
// in. Types only from the SDK: `model.ts` beside it is the one file that loads it.
import type OpenAI from 'openai';
import { z } from 'zod';
import {
  responseOf,
  type LlmContentBlock,
  type LlmMessage,
  type LlmResponse,
  type LlmStopReason,
  type LlmToolSpec,
} from '../model.js';
import { llmUnavailable } from '../retry.js';

// Replies are parsed, never trusted: a local server, a proxy or a fake may answer anything with status 200.
const ToolCallSchema = z.looseObject({
  id: z.string(),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});
const CompletionSchema = z.looseObject({
  model: z.string(),
  choices: z
    .array(
      z.looseObject({
        message: z.looseObject({
          content: z.string().nullish(),
          refusal: z.string().nullish(),
          tool_calls: z.array(ToolCallSchema).nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  // Some OpenAI-compatible servers leave usage out; the call then counts no tokens.
  usage: z.looseObject({ prompt_tokens: z.number(), completion_tokens: z.number() }).nullish(),
});

const STOP_REASONS: Record<string, LlmStopReason> = {
  stop: 'stop',
  tool_calls: 'tool-calls',
  function_call: 'tool-calls',
  length: 'length',
  content_filter: 'content-filter',
};

/** The system prompt and our messages as Chat Completions messages (a tool result is a `tool` message of its own). */
export function toChatMessages(
  system: string,
  messages: readonly LlmMessage[],
): OpenAI.Chat.ChatCompletionMessageParam[] {
  const out: OpenAI.Chat.ChatCompletionMessageParam[] = system ? [{ role: 'system', content: system }] : [];
  for (const message of messages) {
    if (typeof message.content === 'string') {
      out.push({ role: message.role, content: message.content });
    } else if (message.role === 'assistant') {
      out.push(toAssistantMessage(message.content));
    } else {
      for (const block of message.content) {
        if (block.type === 'tool-result')
          out.push({ role: 'tool', tool_call_id: block.toolCallId, content: block.content });
        else if (block.type === 'text') out.push({ role: 'user', content: block.text });
      }
    }
  }
  return out;
}

function toAssistantMessage(blocks: readonly LlmContentBlock[]): OpenAI.Chat.ChatCompletionAssistantMessageParam {
  const text = blocks.map((block) => (block.type === 'text' ? block.text : '')).join('');
  const calls = blocks.flatMap((block) =>
    block.type === 'tool-call'
      ? [
          {
            id: block.id,
            type: 'function' as const,
            function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
          },
        ]
      : [],
  );
  return {
    role: 'assistant',
    content: text || (calls.length ? null : ''),
    ...(calls.length ? { tool_calls: calls } : {}),
  };
}

/** One of our tool specs as a Chat Completions function tool. */
export function toChatTool(tool: LlmToolSpec): OpenAI.Chat.ChatCompletionFunctionTool {
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: { ...tool.inputSchema, type: 'object' } },
  };
}

/** A Chat Completions reply, parsed (never trusted), as our response; a malformed reply is `LLM_UNAVAILABLE`. */
export function toResponse(reply: unknown): LlmResponse {
  const parsed = CompletionSchema.safeParse(reply);
  if (!parsed.success)
    throw llmUnavailable(new Error(`Malformed reply from the Chat Completions API: ${z.prettifyError(parsed.error)}`));
  const completion = parsed.data;
  const { message, finish_reason } = completion.choices[0]!;
  const content: LlmContentBlock[] = [];
  const text = message.content ?? message.refusal ?? '';
  if (text) content.push({ type: 'text', text });
  for (const call of message.tool_calls ?? [])
    content.push({
      type: 'tool-call',
      id: call.id,
      name: call.function.name,
      input: parseArguments(call.function.name, call.function.arguments),
    });
  const calls = content.some((block) => block.type === 'tool-call');
  const stopReason =
    message.refusal && !message.content
      ? 'content-filter'
      : finish_reason
        ? (STOP_REASONS[finish_reason] ?? 'other')
        : calls
          ? 'tool-calls'
          : 'stop';
  const usage = {
    inputTokens: completion.usage?.prompt_tokens ?? 0,
    outputTokens: completion.usage?.completion_tokens ?? 0,
  };
  return responseOf(content, { stopReason, usage, model: completion.model });
}

// Arguments come as a JSON string the model wrote; an empty one is a call without input. The tool's own schema
// then checks the value.
function parseArguments(name: string, text: string): unknown {
  if (!text.trim()) return {};
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw llmUnavailable(new Error(`The arguments of the call of ${name} are not JSON: ${(error as Error).message}`));
  }
}
