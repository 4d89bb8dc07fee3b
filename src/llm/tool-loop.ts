// The tool loop: asks the model, runs the tools it calls, hands their results back, until a reply calls none.
import { AgoraError, describeError } from '../errors.js';
import { callTool, toolInputJsonSchema, type Tool } from '../tool/define.js';
import type {
  LanguageModel,
  LlmContentBlock,
  LlmIntent,
  LlmMessage,
  LlmRequest,
  LlmResponse,
  LlmUsage,
  UsageSink,
} from './model.js';
import { inSpan, SpanKind, TRACING, type Attributes, type Span, type SpanOptions } from '../telemetry/tracing.js';

/** Options of {@link converse}. */
export type ConverseOptions = {
  /** What the call is for (see {@link LlmIntent}). */
  intent?: LlmIntent;
  system: string;
  messages: LlmMessage[];
  tools?: readonly Tool[];
  /** Upper bound on LLM calls in the tool loop (default 8). */
  maxSteps?: number;
  maxTokens?: number;
  temperature?: number;
  signal?: AbortSignal;
  /** Called after each LLM call with its token counts. */
  onUsage?: UsageSink;
  /**
   * Called with the final reply's text as it is generated (joined, the pieces are the result's `text`). Without
   * tools every call is streamed; with tools a call may end in tool calls after some text, so its text is handed
   * out once the call is known to be the last; a model without `stream` hands out the final text in one piece.
   */
  onText?: (text: string) => void;
  /**
   * Characters one call may carry (system and messages, tool results included); over it, no call. Default unlimited.
   */
  maxChars?: number;
};

/** The characters a call carries: its system prompt and the text of its messages. */
export function requestChars(system: string, messages: readonly LlmMessage[]): number {
  let chars = system.length;
  for (const message of messages) {
    if (typeof message.content === 'string') chars += message.content.length;
    else for (const block of message.content) chars += JSON.stringify(block).length;
  }
  return chars;
}

/** One call of the model, streamed when its pieces go out live; its usage on the span (GenAI conventions). */
async function call(
  model: LanguageModel,
  request: LlmRequest,
  live: boolean,
  onText: ((text: string) => void) | undefined,
  span: Span | undefined,
): Promise<LlmResponse> {
  const response = live ? await model.stream!(request, onText!) : await model.complete(request);
  if (span) {
    span.setAttributes({
      'gen_ai.response.model': response.model,
      'gen_ai.usage.input_tokens': response.usage.inputTokens,
      'gen_ai.usage.output_tokens': response.usage.outputTokens,
      'gen_ai.response.finish_reasons': [response.stopReason],
    });
  }
  return response;
}

/** An LLM call's span, by OpenTelemetry's GenAI conventions: what was asked of which model (never the prompt's text). */
function chatSpan(model: LanguageModel, request: LlmRequest): SpanOptions {
  const attributes: Attributes = { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': model.model };
  if (model.provider) {
    attributes['gen_ai.provider.name'] = model.provider;
    attributes['gen_ai.system'] = model.provider;
  }
  if (request.maxTokens !== undefined) attributes['gen_ai.request.max_tokens'] = request.maxTokens;
  if (request.temperature !== undefined) attributes['gen_ai.request.temperature'] = request.temperature;
  if (request.intent) attributes['agora.llm.purpose'] = request.intent.purpose;
  return { kind: SpanKind.CLIENT, attributes };
}

/** A tool call's span (GenAI conventions' `execute_tool`). */
function toolSpan(name: string, id: string): SpanOptions {
  return {
    attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': name, 'gen_ai.tool.call.id': id },
  };
}

/** The outcome of {@link converse}. */
export type ConverseResult = { text: string; messages: LlmMessage[]; usage: LlmUsage; calls: number };

/**
 * Runs the tool loop: asks the LLM, runs the tools it calls (a throwing tool returns its error to the model),
 * and stops at a reply with no tool call or at `maxSteps` LLM calls.
 */
export async function converse(model: LanguageModel, options: ConverseOptions): Promise<ConverseResult> {
  const tools = options.tools ?? [];
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const specs = tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: toolInputJsonSchema(tool),
  }));
  const messages = [...options.messages];
  const usage: LlmUsage = { inputTokens: 0, outputTokens: 0 };
  const maxSteps = options.maxSteps ?? 8;
  const { onText } = options;
  // Live pieces only when no call can turn out to be a tool call: text already handed out cannot be taken back.
  const live = onText !== undefined && model.stream !== undefined && specs.length === 0;
  for (let step = 1; ; step++) {
    // Tool results grow the transcript: each call of the loop is measured, not only the first.
    const chars = options.maxChars === undefined ? 0 : requestChars(options.system, messages);
    if (options.maxChars !== undefined && chars > options.maxChars) {
      throw new AgoraError(
        'LLM_UNAVAILABLE',
        `LLM call of ${chars} characters over the budget of ${options.maxChars}: not made`,
      );
    }
    const request: LlmRequest = {
      ...(options.intent ? { intent: options.intent } : {}),
      system: options.system,
      messages,
      ...(specs.length ? { tools: specs } : {}),
      ...(options.maxTokens !== undefined ? { maxTokens: options.maxTokens } : {}),
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    };
    const response = TRACING.on
      ? await inSpan(`chat ${model.model}`, chatSpan(model, request), (span) =>
          call(model, request, live, onText, span),
        )
      : await call(model, request, live, onText, undefined);
    if (onText && !live && response.toolCalls.length === 0 && response.text) onText(response.text);
    usage.inputTokens += response.usage.inputTokens;
    usage.outputTokens += response.usage.outputTokens;
    options.onUsage?.({ ...response.usage, model: response.model });
    messages.push({ role: 'assistant', content: response.content });
    if (response.toolCalls.length === 0) return { text: response.text, messages, usage, calls: step };
    if (step >= maxSteps) {
      throw new AgoraError('LLM_UNAVAILABLE', `LLM tool loop exceeded ${maxSteps} steps`);
    }
    const results: LlmContentBlock[] = [];
    for (const call of response.toolCalls) {
      const tool = byName.get(call.name);
      try {
        if (!tool) throw new Error(`Unknown tool ${call.name}`);
        const input = call.input;
        const run = () => callTool(tool, input, options.signal ? { signal: options.signal } : {});
        const output = TRACING.on
          ? await inSpan(`execute_tool ${tool.name}`, toolSpan(tool.name, call.id), run)
          : await run();
        results.push({
          type: 'tool-result',
          toolCallId: call.id,
          content: typeof output === 'string' ? output : JSON.stringify(output ?? null),
        });
      } catch (error) {
        results.push({ type: 'tool-result', toolCallId: call.id, content: describeError(error), isError: true });
      }
    }
    messages.push({ role: 'user', content: results });
  }
}
