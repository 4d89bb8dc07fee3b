// The offline demo model: a scripted LanguageModel that needs no key and no network, so every LLM path (natural
// language, suitability, negotiation, answers under a protocol, the routine the LLM writes and its checks) can be
// tried on a fresh clone. It answers by the request's `intent` (the framework's stable seam), never by prompt text.
// It is a demo: it knows one skill, shortening a text to a number of words, and says what it is in every reply.
import type { LanguageModel, LlmContentBlock, LlmRequest, LlmResponse } from './model.js';
import { defineProvider } from './provider.js';

/** The model id the offline demo model reports (banners, metrics, logs). */
export const OFFLINE_MODEL_ID = 'offline-demo';

/** The protocol the offline model proposes in a negotiation: the one skill it can serve. */
export function offlineProtocol(task: { name: string; description: string }): string {
  const name = task.name.replace(/[\r\n:]+/g, ' ').trim() || 'Short summary';
  const description =
    task.description.replace(/[\r\n]+/g, ' ').trim() || 'Shorten a text to at most a number of words.';
  return [
    '---',
    `name: ${name}`,
    `description: ${description}`,
    'multiround: false',
    '---',
    '',
    'The sender sends JSON `{"text": string, "maxWords": integer}`.',
    '',
    'The receiver replies JSON `{"summary": string}`: the first `maxWords` words of the text.',
    '',
    'Errors are replies too: `{"error": "Invalid format"}` when the body does not match.',
    '',
  ].join('\n');
}

/** The offline model's answer under any protocol: the first `maxWords` words of `text`, else the invalid-format error. */
export function offlineSummary(body: unknown): { summary: string } | { error: string } {
  const value = body as { text?: unknown; maxWords?: unknown } | null;
  if (
    !value ||
    typeof value !== 'object' ||
    typeof value.text !== 'string' ||
    !Number.isInteger(value.maxWords) ||
    (value.maxWords as number) < 0
  )
    return { error: 'Invalid format' };
  return {
    summary: value.text
      .split(/\s+/)
      .filter(Boolean)
      .slice(0, value.maxWords as number)
      .join(' '),
  };
}

// The routine the offline model writes: the same skill in code, so its checks pass and the LLM is no longer called.
const ROUTINE = `import { defineRoutine } from 'agora-agents';
import { z } from 'zod';

// Written by the offline demo model: the first maxWords words of the text.
export default defineRoutine({
  input: z.object({ text: z.string(), maxWords: z.number().int().min(0) }),
  output: z.union([z.object({ summary: z.string() }), z.object({ error: z.string() })]),
  async handle(body) {
    return { summary: body.text.split(/\\s+/).filter(Boolean).slice(0, body.maxWords).join(' ') };
  },
});
`;

const TEST_QUERIES = [
  { text: 'Agents on the Agora network agree on protocols, then answer them with code.', maxWords: 4 },
  { text: 'A routine costs nothing per query once it is approved.', maxWords: 6 },
  { text: 'One word', maxWords: 0 },
];

function lastUserText(request: LlmRequest): string {
  for (let index = request.messages.length - 1; index >= 0; index--) {
    const message = request.messages[index]!;
    if (message.role !== 'user') continue;
    if (typeof message.content === 'string') return message.content;
    return message.content
      .map((block) => (block.type === 'text' ? block.text : block.type === 'tool-result' ? block.content : ''))
      .join('');
  }
  return '';
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * A scripted model for demos and offline tours (`agora serve --llm offline`): no key, no network, deterministic.
 * Never chosen by default: only `--llm offline`, `AGORA_LLM=offline` or `new OfflineModel()` pick it.
 * @example const agent = await startAgent({ dir: '.', llm: new OfflineModel() });
 */
export class OfflineModel implements LanguageModel {
  readonly model = OFFLINE_MODEL_ID;
  readonly provider = 'offline';

  /** Answers by the request's intent; a request without one is answered as natural language. */
  async complete(request: LlmRequest): Promise<LlmResponse> {
    const text = this.#reply(request);
    const content: LlmContentBlock[] = [{ type: 'text', text }];
    // Tokens counted as a provider would roughly (4 characters each), so usage and the cost curve move.
    const inputTokens = Math.ceil((request.system.length + JSON.stringify(request.messages).length) / 4);
    return {
      text,
      toolCalls: [],
      content,
      stopReason: 'stop',
      usage: { inputTokens, outputTokens: Math.ceil(text.length / 4) },
      model: this.model,
    };
  }

  #reply(request: LlmRequest): string {
    const intent = request.intent;
    const said = lastUserText(request);
    switch (intent?.purpose) {
      case 'suitability':
        return 'The offline demo model serves any protocol with its one skill: the first words of a text.\nYES';
      case 'protocol-answer':
        return JSON.stringify(offlineSummary(parsed(said)));
      case 'negotiate-propose': {
        const task = intent.task ?? { name: 'Short summary', description: '' };
        const proposal = offlineProtocol(task);
        // The first message proposes; once the peer has answered, the same document is final.
        return request.messages.some((message) => message.role === 'assistant')
          ? `<FINALPROTOCOL>\n${proposal}</FINALPROTOCOL>`
          : proposal;
      }
      case 'negotiate-respond':
        return 'I accept this protocol: I can serve it.';
      case 'routine':
        return `\`\`\`ts\n${ROUTINE}\`\`\``;
      case 'test-queries':
        return JSON.stringify(TEST_QUERIES);
      case 'task-routine':
      case 'task':
      case 'routing':
        return '(offline demo model: this step needs a real LLM: --llm anthropic or openai)';
      default:
        return `(offline demo model) You said: ${JSON.stringify(said.slice(0, 200))}. A real LLM (--llm anthropic or openai) answers in words; this one only demonstrates the path.`;
    }
  }
}

/** `--llm offline`: the scripted demo model; reads no variable, so it is never picked unless named. */
export const offlineProvider = defineProvider({
  name: 'offline',
  env: [],
  defaultModel: OFFLINE_MODEL_ID,
  create: () => new OfflineModel(),
});
