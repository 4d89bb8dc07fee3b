// A deterministic stand-in for Claude, for the examples and `npm run bench:cost`: a reply function for
// `FakeAnthropic` that recognises every prompt the framework sends and answers it as a competent model would.
//
// It knows no domain. All it knows comes from the request, as for a real model: the task's JSON Schemas, the
// protocol document, the tools' names, descriptions and input schemas, the other agent's messages, and the
// results of the tool calls it makes. So the weather agent's forecasts reach it only through `get_forecast`,
// and the network example's currency and train services run on the same brain.
//
// Its conventions, which a real model does not need: a natural-language query names each input as
// `key <JSON value>` ("for city "Paris" and date "2025-06-01""), an answer names each result as
// `the key is <JSON value>`, and a protocol document it writes gives the two JSON shapes after "The sender
// sends JSON" and "The receiver replies JSON" (the shape §1 of the spec uses).
//
// @example
// const fake = await FakeAnthropic.start({ fallback: brain, tokenModel: 'chars' });
// const llm = new AnthropicModel({ baseURL: fake.url, apiKey: 'fake', maxRetries: 0 });
import type { FakeReply, FakeRequest } from 'agora-agents/testing';

/** The sentence of each framework prompt the brain recognises it by (tests check that the sources still hold them). */
export const PROMPT_MARKERS = {
  /** src/sender.ts: write a natural-language query from a task's input. */
  naturalLanguageQuery: 'You do a task by sending one message in natural language to another agent.',
  /** src/sender.ts: write a query body under a PD. */
  protocolBody: 'Write the body of the query exactly as the protocol prescribes for the sender',
  /** src/sender.ts: read a reply into the task's output JSON. */
  readReply: 'turn its reply into the JSON value the',
  /** src/sender.ts: does a PD fit a task? */
  judgeFit: 'You decide whether a protocol document lets you do a task',
  /** src/negotiation.ts: the sender's side of a negotiation. */
  proposeProtocol: 'You negotiate a protocol document (PD) with another agent',
  /** src/negotiation.ts: the receiver's side of a negotiation. */
  answerNegotiation: 'Another agent negotiates a protocol document (PD) with you',
  /** src/llm/peer-answers.ts: can this agent serve a PD learned from a peer? */
  suitability: 'Decide whether you can honour it',
  /** src/llm/peer-answers.ts: answer a natural-language query with the tools. */
  answerNaturalLanguage: 'Another agent sends you a message in natural language.',
  /** src/llm/peer-answers.ts: answer a query under a PD with the tools. */
  answerUnderProtocol: 'Another agent queries you under this protocol document',
  /** src/routine/generate.ts: write a receiver routine. */
  writeRoutine: 'You write routines for an agent on the Agora network.',
  /** src/routine/task-routines.ts: write a sender (task) routine. */
  writeTaskRoutine: 'You write task routines for an agent on the Agora network.',
  /** src/routine/generate.ts: write test queries for a PD. */
  writeCheckQueries: 'You write test queries for a protocol document',
} as const;

type Kind = keyof typeof PROMPT_MARKERS;

/** The brain: one reply per request of the Messages API. */
export function brain(request: FakeRequest): FakeReply {
  const kind = (Object.keys(PROMPT_MARKERS) as Kind[]).find((key) => request.system.includes(PROMPT_MARKERS[key]));
  if (!kind) return refuse(`unrecognised prompt: ${JSON.stringify(request.system.slice(0, 120))}`);
  const messages = (request.body.messages ?? []) as Message[];
  // The first user message holds the data; later ones only ask again (repairs, fixes) or carry tool results.
  const first = textOf(messages[0]?.content);
  switch (kind) {
    case 'naturalLanguageQuery':
      return writeNaturalLanguageQuery(first);
    case 'protocolBody':
      return writeProtocolBody(request.system, first);
    case 'readReply':
      return readReply(request.system, first);
    case 'judgeFit':
      return judgeFit(first);
    case 'proposeProtocol':
      return negotiateAsSender(request.system, messages);
    case 'answerNegotiation':
      return verdict(toolsListed(request.system), parseProtocol(textOf(messages.at(-1)?.content)), 'negotiation');
    case 'suitability':
      return verdict(toolsListed(request.system), parseProtocol(first), 'suitability');
    case 'answerNaturalLanguage':
      return answerNaturalLanguage(messages, toolsOf(request));
    case 'answerUnderProtocol':
      return answerUnderProtocol(request.system, messages, toolsOf(request));
    case 'writeRoutine':
      return writeRoutine(first);
    case 'writeTaskRoutine':
      return writeTaskRoutine(first);
    case 'writeCheckQueries':
      return writeCheckQueries(first);
  }
}

// --- what the brain reads ------------------------------------------------------------------------------------

type Message = { role: 'user' | 'assistant'; content: string | Block[] };
type Block = {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: unknown;
  is_error?: boolean;
};
type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** A field of a JSON body: from a JSON Schema property, or from a PD's `{"key": type}` shape. */
type Field = {
  name: string;
  type: 'string' | 'number' | 'boolean' | 'unknown';
  values?: string[];
  description?: string;
  required: boolean;
};
/** What the brain understands of a protocol document. */
type Protocol = { name: string; sends: Field[]; replies: Field[]; invalidReply: string };
type ToolSpec = { name: string; description: string; inputs: Field[] };

function refuse(message: string): FakeReply {
  return {
    status: 400,
    body: { type: 'error', error: { type: 'invalid_request_error', message: `brain: ${message}` } },
  };
}

function textOf(content: Message['content'] | undefined): string {
  if (typeof content === 'string') return content;
  return (content ?? []).map((block) => (block.type === 'text' ? (block.text ?? '') : '')).join('');
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseJson(text: string): Json | undefined {
  try {
    return JSON.parse(text) as Json;
  } catch {
    return undefined;
  }
}

/** The JSON object written after a label on the same line (`Input (JSON): {...}`). */
function jsonAfter(text: string, label: string): JsonObject | undefined {
  const at = text.indexOf(label);
  if (at < 0) return undefined;
  const line = text
    .slice(at + label.length)
    .split('\n', 1)[0]!
    .trim();
  const value = parseJson(line);
  return isObject(value) ? value : undefined;
}

function fieldsOfSchema(schema: JsonObject | undefined): Field[] {
  const properties = isObject(schema?.properties) ? schema.properties : {};
  const required = Array.isArray(schema?.required) ? schema.required : [];
  return Object.entries(properties).map(([name, property]) => {
    const type = isObject(property) ? property.type : undefined;
    const values =
      isObject(property) && Array.isArray(property.enum)
        ? property.enum.filter((value): value is string => typeof value === 'string')
        : undefined;
    const description =
      isObject(property) && typeof property.description === 'string' ? property.description : undefined;
    return {
      name,
      type:
        type === 'number' || type === 'integer'
          ? 'number'
          : type === 'string' || type === 'boolean'
            ? type
            : values
              ? 'string'
              : 'unknown',
      ...(values?.length ? { values } : {}),
      ...(description ? { description } : {}),
      required: required.includes(name),
    };
  });
}

/** The fields of the first `{...}` after a phrase: `"city": string, "date": "YYYY-MM-DD"`. */
function shapeAfter(text: string, phrase: RegExp): Field[] | undefined {
  const match = phrase.exec(text);
  if (!match) return undefined;
  const start = text.indexOf('{', match.index);
  let depth = 0;
  for (let index = start; start >= 0 && index < text.length; index++) {
    if (text[index] === '{') depth++;
    if (text[index] === '}' && --depth === 0) {
      return text
        .slice(start + 1, index)
        .split(/,(?=\s*")/)
        .flatMap((part) => {
          const field = /^\s*"([^"]+)"\s*:\s*(.*?)\s*$/s.exec(part);
          if (!field) return [];
          const type = field[2]!;
          const values = [...type.matchAll(/"([^"]*)"/g)].map((value) => value[1]!);
          const kind = /\b(number|integer|float)\b/.test(type)
            ? 'number'
            : /\bboolean\b/.test(type)
              ? 'boolean'
              : 'string';
          // `"sunny"|"windy"` is a closed list; `"sunny"|"windy"|...` an open one, read as any string.
          const closed = values.length > 1 && !type.includes('...');
          return [{ name: field[1]!, type: kind, ...(closed ? { values } : {}), required: true } satisfies Field];
        });
    }
  }
  return undefined;
}

function parseProtocol(text: string): Protocol | undefined {
  const document = /<protocol>\s*([\s\S]*?)<\/protocol>/.exec(text)?.[1] ?? text;
  const sends = shapeAfter(document, /sender sends/i);
  const replies = shapeAfter(document, /receiver replies/i);
  if (!sends || !replies) return undefined;
  const name =
    /^name:\s*(.+)$/m
      .exec(document)?.[1]
      ?.trim()
      .replace(/^"(.*)"$/, '$1') ?? 'the protocol';
  const errors = [...document.matchAll(/\{\s*"error"\s*:\s*"([^"]+)"\s*\}/g)].map((match) => match[1]!);
  return { name, sends, replies, invalidReply: errors.find((error) => /invalid/i.test(error)) ?? 'Invalid format' };
}

/** The tools declared in the request (answers in natural language or under a PD). */
function toolsOf(request: FakeRequest): ToolSpec[] {
  const tools = (request.body.tools ?? []) as { name: string; description?: string; input_schema?: JsonObject }[];
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description ?? '',
    inputs: fieldsOfSchema(tool.input_schema),
  }));
}

/** The tools a system prompt lists as `- name: description` under its "Tools …:" heading (no schemas there). */
function toolsListed(system: string): ToolSpec[] {
  const section = /\nTools [^\n]*:\n((?:- [^\n]*\n?)*)/.exec(system)?.[1] ?? '';
  return [...section.matchAll(/^- ([\w-]+): (.*)$/gm)].map((match) => ({
    name: match[1]!,
    description: match[2]!,
    inputs: [],
  }));
}

/** The value written after a key: `city "Paris"`, `precipitation is 20`. */
function valueAfter(text: string, key: string): Json | undefined {
  const pattern = new RegExp(
    `\\b${key.replace(/[^\w]/g, '\\$&')}\\s+(?:is\\s+)?("(?:[^"\\\\]|\\\\.)*"|-?\\d+(?:\\.\\d+)?(?:e[+-]?\\d+)?|true|false)`,
    'i',
  );
  const match = pattern.exec(text);
  return match ? parseJson(match[1]!) : undefined;
}

function list(items: string[]): string {
  return items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

function pairs(values: JsonObject): string {
  return list(Object.entries(values).map(([key, value]) => `${key} ${JSON.stringify(value)}`));
}

function fits(field: Field, value: Json | undefined): boolean {
  if (value === undefined) return !field.required;
  if (field.type === 'unknown') return true;
  return typeof value === field.type && (!field.values || field.values.includes(value as string));
}

function pick(values: JsonObject, fields: Field[]): JsonObject {
  return Object.fromEntries(
    fields.filter((field) => values[field.name] !== undefined).map((field) => [field.name, values[field.name]!]),
  );
}

function errorText(content: unknown): string {
  const text =
    typeof content === 'string'
      ? content
      : Array.isArray(content)
        ? content.map((block: Block) => block.text ?? '').join('')
        : String(content);
  return text.replace(/^\w*Error: /, '');
}

// --- the sender's prompts --------------------------------------------------------------------------------------

function writeNaturalLanguageQuery(prompt: string): FakeReply {
  const input = jsonAfter(prompt, 'Input (JSON): ');
  const wanted = fieldsOfSchema(jsonAfter(prompt, 'What the task needs back (JSON Schema): ')).map(
    (field) => field.name,
  );
  if (!input) return refuse('no task input in the prompt');
  return `Please give me the ${list(wanted) || 'answer'} for ${pairs(input)}.`;
}

function writeProtocolBody(system: string, prompt: string): FakeReply {
  const protocol = parseProtocol(system);
  const input = jsonAfter(prompt, 'Input (JSON): ');
  if (!protocol || !input) return refuse('no protocol or no input to write a body from');
  return JSON.stringify(pick(input, protocol.sends));
}

function readReply(system: string, prompt: string): FakeReply {
  const wanted = fieldsOfSchema(jsonAfter(system, 'That value must match this JSON Schema: '));
  const reply = prompt.slice(prompt.lastIndexOf('The other agent replied:\n') + 'The other agent replied:\n'.length);
  const json = parseJson(reply);
  // A JSON reply is read by key; a sentence by the values it names.
  const output: JsonObject = {};
  for (const field of wanted) {
    const value = isObject(json) ? json[field.name] : valueAfter(reply, field.name);
    if (value !== undefined) output[field.name] = value;
  }
  if (wanted.some((field) => field.required && output[field.name] === undefined))
    return `The reply does not say: ${reply.slice(0, 200)}`;
  return JSON.stringify(output);
}

/** Whether a PD lets a task be done: every field it asks for is in the task's input, everything the task needs is in its reply. */
function judgeFit(prompt: string): FakeReply {
  const inputs = fieldsOfSchema(jsonAfter(prompt, "The task's input (JSON Schema): "));
  const outputs = fieldsOfSchema(jsonAfter(prompt, 'What the task needs back (JSON Schema): '));
  const protocol = parseProtocol(prompt);
  if (!protocol) return 'I cannot read the shapes of this protocol.\nNO';
  const unknown = protocol.sends.filter(
    (field) =>
      field.required &&
      !inputs.some((input) => input.name === field.name && (input.type === field.type || input.type === 'unknown')),
  );
  const missing = outputs.filter(
    (output) => output.required && !protocol.replies.some((field) => field.name === output.name),
  );
  if (unknown.length)
    return `The protocol asks for ${list(unknown.map((field) => field.name))}, which the task's input does not have.\nNO`;
  if (missing.length)
    return `The reply of "${protocol.name}" lacks ${list(missing.map((field) => field.name))}, which the task needs.\nNO`;
  return `"${protocol.name}" takes ${list(protocol.sends.map((field) => field.name))} and replies with ${list(outputs.map((field) => field.name))}: everything the task needs.\nYES`;
}

function shapeText(fields: Field[]): string {
  const type = (field: Field) => {
    const base = field.values
      ? field.values.map((value) => JSON.stringify(value)).join('|')
      : field.type === 'unknown'
        ? 'any'
        : field.type;
    // A description that cannot be mistaken for the shape's syntax goes along: `"date": string (YYYY-MM-DD)`.
    return field.description && !/["{},]/.test(field.description) ? `${base} (${field.description})` : base;
  };
  return `{${fields.map((field) => `"${field.name}": ${type(field)}`).join(', ')}}`;
}

function yamlText(text: string): string {
  return /^[\w .,()/-]*$/.test(text) && !/^\s|\s$/.test(text) ? text : JSON.stringify(text);
}

/** The PD the sender proposes for a task: its input as the body, its output as the reply, and the errors. */
function proposal(system: string): string | undefined {
  const task = /^The task: ([^.]+)\. ?(.*)$/m.exec(system);
  const inputs = fieldsOfSchema(jsonAfter(system, 'What you will have for each query (JSON Schema): '));
  const outputs = fieldsOfSchema(jsonAfter(system, 'What you need back (JSON Schema): '));
  if (!task || !inputs.length || !outputs.length) return undefined;
  const words = task[1]!.replace(/[_-]+/g, ' ').trim();
  return [
    '---',
    `name: ${yamlText(words.charAt(0).toUpperCase() + words.slice(1))}`,
    `description: ${yamlText(task[2]!.trim() || words)}`,
    'multiround: false',
    '---',
    '',
    `The sender sends JSON ${shapeText(inputs)}.`,
    '',
    `The receiver replies JSON ${shapeText(outputs)}.`,
    '',
    'Errors are replies too: {"error": "Invalid format"} when the body does not match, and {"error": string}, a short',
    'reason, when the query cannot be served.',
    '',
  ].join('\n');
}

function negotiateAsSender(system: string, messages: Message[]): FakeReply {
  const document = proposal(system);
  if (!document) return refuse('no task schemas to propose a protocol from');
  const answer = textOf(messages.at(-1)?.content);
  if (messages.length > 1 && /\baccept/i.test(answer) && !/\b(cannot|not accept)\b/i.test(answer))
    return `<FINALPROTOCOL>\n${document}</FINALPROTOCOL>`;
  return `I propose this protocol document:\n\n${document}`;
}

// --- the receiver's prompts ------------------------------------------------------------------------------------

/** Suitability and negotiation alike: a PD is served when one tool covers every field of its body and reply. */
function verdict(tools: ToolSpec[], protocol: Protocol | undefined, purpose: 'suitability' | 'negotiation'): FakeReply {
  if (!protocol)
    return purpose === 'negotiation'
      ? 'Please send a complete protocol document, with the JSON shapes of the query and of the reply.'
      : 'I cannot read this protocol.\nNO';
  const fields = [...protocol.sends, ...protocol.replies].map((field) => field.name);
  const covered = (tool: ToolSpec) =>
    fields.filter((field) => !new RegExp(`\\b${field}\\b`, 'i').test(`${tool.name} ${tool.description}`));
  const best = tools
    .map((tool) => ({ tool, missing: covered(tool) }))
    .sort((a, b) => a.missing.length - b.missing.length)[0];
  if (!best || best.missing.length) {
    const reason = best ? `my tools do not provide ${list(best.missing)}` : 'I have no tools';
    return purpose === 'negotiation'
      ? `I cannot serve this protocol: ${reason}.`
      : `I cannot honour "${protocol.name}": ${reason}.\nNO`;
  }
  const reason = `${best.tool.name} takes ${list(protocol.sends.map((field) => field.name))} and gives ${list(protocol.replies.map((field) => field.name))}`;
  return purpose === 'negotiation'
    ? `I accept this protocol: ${reason}.`
    : `I can honour "${protocol.name}": ${reason}.\nYES`;
}

/** The tool call and its result, when the last message carries the result. */
function toolExchange(messages: Message[]): { input: JsonObject; result: unknown; failed: boolean } | undefined {
  const last = messages.at(-1)?.content;
  const result = Array.isArray(last) ? last.find((block) => block.type === 'tool_result') : undefined;
  if (!result) return undefined;
  const previous = messages.at(-2)?.content;
  const call = Array.isArray(previous)
    ? previous.find((block) => block.type === 'tool_use' && block.id === result.tool_use_id)
    : undefined;
  return { input: isObject(call?.input) ? call.input : {}, result: result.content, failed: result.is_error === true };
}

/** The tool whose required inputs are all available, with its input. */
function chooseTool(
  tools: ToolSpec[],
  valueOf: (key: string) => Json | undefined,
): { name: string; input: JsonObject } | undefined {
  for (const tool of tools) {
    const input: JsonObject = {};
    for (const field of tool.inputs) {
      const value = valueOf(field.name);
      if (value !== undefined) input[field.name] = value;
    }
    if (tool.inputs.length && tool.inputs.every((field) => fits(field, input[field.name])))
      return { name: tool.name, input };
  }
  return undefined;
}

function answerNaturalLanguage(messages: Message[], tools: ToolSpec[]): FakeReply {
  const exchange = toolExchange(messages);
  if (exchange) {
    if (exchange.failed)
      return `Sorry, I could not get that for ${pairs(exchange.input)}: ${errorText(exchange.result)}.`;
    const result = parseJson(errorText(exchange.result));
    if (!isObject(result)) return `For ${pairs(exchange.input)}: ${errorText(exchange.result)}.`;
    return `For ${pairs(exchange.input)}, ${list(Object.entries(result).map(([key, value]) => `the ${key} is ${JSON.stringify(value)}`))}.`;
  }
  const question = textOf(messages.at(-1)?.content);
  const call = chooseTool(tools, (key) => valueAfter(question, key));
  if (!call)
    return `I can help with: ${tools.map((tool) => tool.description).join(' ') || 'nothing, I have no tools'}. Please say which values to use.`;
  return { toolUse: [call] };
}

function answerUnderProtocol(system: string, messages: Message[], tools: ToolSpec[]): FakeReply {
  const protocol = parseProtocol(system);
  if (!protocol) return refuse('no protocol to answer under');
  const exchange = toolExchange(messages);
  if (exchange) {
    if (exchange.failed) return JSON.stringify({ error: errorText(exchange.result) });
    const result = parseJson(errorText(exchange.result));
    return JSON.stringify(isObject(result) ? pick(result, protocol.replies) : { error: 'The query cannot be served' });
  }
  const body = parseJson(textOf(messages.findLast((message) => typeof message.content === 'string')?.content));
  if (!isObject(body) || !protocol.sends.every((field) => fits(field, body[field.name])))
    return JSON.stringify({ error: protocol.invalidReply });
  const call = chooseTool(tools, (key) => body[key]);
  return call ? { toolUse: [call] } : JSON.stringify({ error: 'The query cannot be served' });
}

// --- code --------------------------------------------------------------------------------------------------------

function zodOf(field: Field): string {
  const base = field.values
    ? `z.enum(${JSON.stringify(field.values)})`
    : field.type === 'unknown'
      ? 'z.unknown()'
      : `z.${field.type}()`;
  return field.required ? base : `${base}.optional()`;
}

function zodObject(fields: Field[]): string {
  return `z.object({ ${fields.map((field) => `${field.name}: ${zodOf(field)}`).join(', ')} })`;
}

function tsType(fields: Field[]): string {
  const type = (field: Field) =>
    field.values ? field.values.map((value) => JSON.stringify(value)).join(' | ') : field.type;
  return `{ ${fields.map((field) => `${field.name}${field.required ? '' : '?'}: ${type(field)}`).join('; ')} }`;
}

function property(object: string, key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${object}.${key}` : `${object}[${JSON.stringify(key)}]`;
}

function fence(code: string): string {
  return `\`\`\`ts\n${code}\`\`\`\n`;
}

/** A receiver routine: the body's fields to the tool that takes them, the tool's result as the reply. */
function writeRoutine(prompt: string): FakeReply {
  const protocol = parseProtocol(prompt);
  const tools = [...prompt.matchAll(/^- ([\w-]+): .*\n {2}input \(JSON Schema\): (\{.*\})$/gm)].map((match) => ({
    name: match[1]!,
    description: '',
    inputs: fieldsOfSchema(parseJson(match[2]!) as JsonObject),
  }));
  if (!protocol) return refuse('no protocol to write a routine for');
  const tool = tools.find((candidate) =>
    candidate.inputs.every((field) => !field.required || protocol.sends.some((send) => send.name === field.name)),
  );
  if (!tool) return 'None of the tools can serve this protocol, so I cannot write a routine for it.';
  const input = tool.inputs.filter((field) => protocol.sends.some((send) => send.name === field.name));
  return fence(
    [
      "import { defineRoutine } from 'agora-agents';",
      "import { z } from 'zod';",
      '',
      `// "${protocol.name}": the body's fields go to ${tool.name}, whose result is the reply.`,
      `const Reply = ${zodObject(protocol.replies)};`,
      '',
      'export default defineRoutine({',
      `  input: ${zodObject(protocol.sends)},`,
      '  output: z.union([Reply, z.object({ error: z.string() })]),',
      '  async handle(body, context) {',
      '    let data: unknown;',
      '    try {',
      `      data = await ${property('context.tools', tool.name)}({ ${input.map((field) => `${field.name}: ${property('body', field.name)}`).join(', ')} });`,
      '    } catch (error) {',
      "      // The tool's own reason is the protocol's error reply.",
      "      return { error: error instanceof Error ? error.message.replace(/^\\w*Error: /, '') : 'The query cannot be served' };",
      '    }',
      '    return Reply.parse(data);',
      '  },',
      '});',
      '',
    ].join('\n'),
  );
}

/** A sender routine: the input's fields as the body, the reply's fields as the output. */
function writeTaskRoutine(prompt: string): FakeReply {
  const inputs = fieldsOfSchema(jsonAfter(prompt, 'Its input (JSON Schema): '));
  const outputs = fieldsOfSchema(jsonAfter(prompt, 'Its output (JSON Schema): '));
  const protocol = parseProtocol(prompt);
  if (!protocol || !outputs.length) return refuse('no protocol or no task output to write a task routine for');
  const body = protocol.sends.filter((field) => inputs.some((input) => input.name === field.name));
  return fence(
    [
      "import { z } from 'zod';",
      '',
      `// Under "${protocol.name}": the body is the input's fields, the output is read from the reply.`,
      `const Reply = ${zodObject(outputs)};`,
      '',
      'export default {',
      `  buildBody(input: ${tsType(inputs)}): unknown {`,
      `    return { ${body.map((field) => `${field.name}: ${property('input', field.name)}`).join(', ')} };`,
      '  },',
      `  parseReply(body: unknown): ${tsType(outputs)} {`,
      '    const reply = Reply.parse(body);',
      `    return { ${outputs.map((field) => `${field.name}: ${property('reply', field.name)}`).join(', ')} };`,
      '  },',
      '};',
      '',
    ].join('\n'),
  );
}

/** Typical bodies with made-up values, and last a body missing every field (the protocol's invalid case). */
function writeCheckQueries(prompt: string): FakeReply {
  const protocol = parseProtocol(prompt);
  const count = Number(/Write (\d+) different bodies/.exec(prompt)?.[1] ?? 3);
  if (!protocol) return '[]';
  const sample = (field: Field, variant: number): Json =>
    field.values
      ? field.values[variant % field.values.length]!
      : field.type === 'number'
        ? variant + 1
        : field.type === 'boolean'
          ? variant % 2 === 0
          : `example ${variant + 1}`;
  const bodies: Json[] = Array.from({ length: Math.max(0, count - 1) }, (_, variant) =>
    Object.fromEntries(protocol.sends.map((field) => [field.name, sample(field, variant)])),
  );
  return JSON.stringify([...bodies, {}].slice(0, count));
}
