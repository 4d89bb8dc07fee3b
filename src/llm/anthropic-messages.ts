// The mapping between the LLM seam's types and the Anthropic Messages API: requests out, replies parsed back in.
// Types only from the SDK: `anthropic.ts` stays the one file that loads it.
import type Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';
import { AgoraError } from '../errors.js';
import type { LlmContentBlock, LlmMessage, LlmResponse, LlmToolSpec } from './toolformer.js';

// Replies are parsed, never trusted: a proxy or a fake may answer anything with status 200.
const TextBlockSchema = z.object({ type: z.literal('text'), text: z.string() });
const ToolUseBlockSchema = z.object({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.unknown() });
const MessageSchema = z.object({
  model: z.string(),
  content: z.array(z.looseObject({ type: z.string() })),
  stop_reason: z.string().nullish(),
  usage: z.looseObject({ input_tokens: z.number(), output_tokens: z.number() }),
});

/** The error every failure of the Messages API becomes, with its cause kept. */
export function llmUnavailable(cause: unknown): AgoraError {
  return new AgoraError('LLM_UNAVAILABLE', 'LLM unavailable', { cause });
}

/** One of our messages as a Messages API message (empty text blocks left out: the API rejects them). */
export function toMessageParam(message: LlmMessage): Anthropic.MessageParam {
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

/** One of our tool specs as a Messages API tool. */
export function toToolParam(tool: LlmToolSpec): Anthropic.Tool {
  return { name: tool.name, description: tool.description, input_schema: { ...tool.inputSchema, type: 'object' } };
}

/** A Messages API reply, parsed (never trusted), as our response; a malformed reply is `LLM_UNAVAILABLE`. */
export function toResponse(reply: unknown): LlmResponse {
  const parsed = MessageSchema.safeParse(reply);
  if (!parsed.success) throw llmUnavailable(new Error(`Malformed reply from the Messages API: ${z.prettifyError(parsed.error)}`));
  const message = parsed.data;
  const content: LlmContentBlock[] = [];
  for (const block of message.content) {
    // Other block types (thinking, server tools) are not part of the seam and are left out.
    const schema = block.type === 'text' ? TextBlockSchema : block.type === 'tool_use' ? ToolUseBlockSchema : undefined;
    if (!schema) continue;
    const checked = schema.safeParse(block);
    if (!checked.success) throw llmUnavailable(new Error(`Malformed ${block.type} block from the Messages API: ${z.prettifyError(checked.error)}`));
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
