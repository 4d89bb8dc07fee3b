// The mapping between the neutral LLM seam and the Anthropic Messages API: requests out, replies parsed back in.
// Types only from the SDK: `model.ts` beside it is the one file that loads it.
import type Anthropic from '@anthropic-ai/sdk';
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

// Replies are parsed, never trusted: a proxy or a fake may answer anything with status 200.
const TextBlockSchema = z.object({ type: z.literal('text'), text: z.string() });
const ToolUseBlockSchema = z.object({
  type: z.literal('tool_use'),
  id: z.string(),
  name: z.string(),
  input: z.unknown(),
});
const MessageSchema = z.object({
  model: z.string(),
  content: z.array(z.looseObject({ type: z.string() })),
  stop_reason: z.string().nullish(),
  usage: z.looseObject({ input_tokens: z.number(), output_tokens: z.number() }),
});

// The Messages API refuses empty message content, and a peer or an LLM may well send an empty string.
const EMPTY_MESSAGE = '(empty message)';

const STOP_REASONS: Record<string, LlmStopReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  tool_use: 'tool-calls',
  max_tokens: 'length',
  refusal: 'content-filter',
};

/**
 * Our messages as Messages API messages. The API wants the user to speak first (a history trimmed to its latest
 * messages may open with our reply, which is dropped) and refuses empty content and empty text blocks.
 */
export function toMessageParams(messages: readonly LlmMessage[]): Anthropic.MessageParam[] {
  const start = messages.findIndex((message) => message.role === 'user');
  return (start < 0 ? [] : messages.slice(start)).map(toMessageParam);
}

function toMessageParam(message: LlmMessage): Anthropic.MessageParam {
  if (typeof message.content === 'string')
    return { role: message.role, content: message.content.trim() ? message.content : EMPTY_MESSAGE };
  // A reply of only tool calls may carry an empty text block, which the API rejects.
  const blocks = message.content.filter((block) => block.type !== 'text' || block.text !== '');
  if (blocks.length === 0) return { role: message.role, content: EMPTY_MESSAGE };
  return { role: message.role, content: blocks.map(toBlockParam) } as Anthropic.MessageParam;
}

function toBlockParam(block: LlmContentBlock): Anthropic.ContentBlockParam {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'tool-call':
      return { type: 'tool_use', id: block.id, name: block.name, input: block.input };
    case 'tool-result':
      return {
        type: 'tool_result',
        tool_use_id: block.toolCallId,
        content: block.content,
        ...(block.isError ? { is_error: true } : {}),
      };
  }
}

/** One of our tool specs as a Messages API tool. */
export function toToolParam(tool: LlmToolSpec): Anthropic.Tool {
  return { name: tool.name, description: tool.description, input_schema: { ...tool.inputSchema, type: 'object' } };
}

/** A Messages API reply, parsed (never trusted), as our response; a malformed reply is `LLM_UNAVAILABLE`. */
export function toResponse(reply: unknown): LlmResponse {
  const parsed = MessageSchema.safeParse(reply);
  if (!parsed.success)
    throw llmUnavailable(new Error(`Malformed reply from the Messages API: ${z.prettifyError(parsed.error)}`));
  const message = parsed.data;
  const content: LlmContentBlock[] = [];
  for (const block of message.content) {
    // Other block types (thinking, server tools) are not part of the seam and are left out.
    if (block.type === 'text') {
      const checked = TextBlockSchema.safeParse(block);
      if (!checked.success) throw malformedBlock(block.type, checked.error);
      content.push(checked.data);
    } else if (block.type === 'tool_use') {
      const checked = ToolUseBlockSchema.safeParse(block);
      if (!checked.success) throw malformedBlock(block.type, checked.error);
      content.push({ type: 'tool-call', id: checked.data.id, name: checked.data.name, input: checked.data.input });
    }
  }
  const stopReason = message.stop_reason ? (STOP_REASONS[message.stop_reason] ?? 'other') : 'stop';
  return responseOf(content, {
    stopReason,
    usage: { inputTokens: message.usage.input_tokens, outputTokens: message.usage.output_tokens },
    model: message.model,
  });
}

function malformedBlock(type: string, error: z.ZodError): Error {
  return llmUnavailable(new Error(`Malformed ${type} block from the Messages API: ${z.prettifyError(error)}`));
}
