// The MCP tools of an agent: one per protocol it serves (named from the document's name, described by its
// description and contract, its input schema from the routine's zod input when there is one) and `ask` for natural
// language when the agent has an LLM, derived from the agent's catalogue. A call is an Agora query under that protocol.
import { z } from 'zod';
import type { ReceiverApi } from '../../receiver.js';
import type { JsonValue } from '../../schemas.js';
import type { Catalogue, CatalogueEntry } from '../../faces/catalogue.js';

/** One MCP tool as listed, with what a call needs: the protocol it queries and how its arguments carry the body. */
export type McpTool = {
  name: string;
  /** The document's own name and description (`ask`: the tool's). */
  title: string;
  summary: string;
  description: string;
  inputSchema: { type: 'object'; [key: string]: unknown };
  outputSchema?: { type: 'object'; [key: string]: unknown };
  /** Hex hash of the protocol; absent for `ask` (natural language). */
  hash?: string;
  /** Whether the arguments are the body itself (an object input) or carry it as `body`. */
  wrapped: boolean;
  multiround: boolean;
};

/** The natural-language tool's name. */
export const ASK_TOOL = 'ask';

const MAX_NAME = 64;
const MAX_CONTRACT_CHARS = 4000;

/** A document's name as an MCP tool name: letters, digits, `_`, `-` and `.`, at most 64 characters. */
export function toolNameOf(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9_.-]+/g, '_')
    .replace(/^[_.-]+|[_.-]+$/g, '')
    .toLowerCase();
  return (slug || 'protocol').slice(0, MAX_NAME);
}

// The JSON Schema of a zod schema, or undefined when zod cannot express it.
function jsonSchemaOf(schema: z.ZodType | undefined, io: 'input' | 'output'): Record<string, unknown> | undefined {
  if (schema === undefined) return undefined;
  try {
    const json = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
    delete json.$schema;
    return json;
  } catch {
    return undefined;
  }
}

function isObjectSchema(
  schema: Record<string, unknown> | undefined,
): schema is { type: 'object'; [key: string]: unknown } {
  return schema !== undefined && schema.type === 'object';
}

function describe(name: string, description: string, contract: string): string {
  const text = contract.trim();
  const shown = text.length > MAX_CONTRACT_CHARS ? `${text.slice(0, MAX_CONTRACT_CHARS)}…` : text;
  return `${description || name} (Agora protocol "${name}")${shown ? `\n\n${shown}` : ''}`;
}

/**
 * The tools an agent offers over MCP, derived from its catalogue (each document parsed once there). `ask` is offered
 * when the receiver answers natural language (`naturalLanguage` overrides, for a remote agent whose LLM cannot be
 * seen).
 */
export class McpToolTable {
  readonly #receiver: Pick<ReceiverApi, 'capabilities'>;
  readonly #catalogue: Catalogue;
  readonly #naturalLanguage: boolean | undefined;
  #tools: Map<string, McpTool> | undefined;
  #building: Promise<Map<string, McpTool>> | undefined;

  constructor(
    receiver: Pick<ReceiverApi, 'capabilities'>,
    catalogue: Catalogue,
    options: { naturalLanguage?: boolean } = {},
  ) {
    this.#receiver = receiver;
    this.#catalogue = catalogue;
    this.#naturalLanguage = options.naturalLanguage;
  }

  /** Forgets the listing (the protocols changed); the next read builds it again. */
  invalidate(): void {
    this.#tools = undefined;
  }

  /** Every tool, freshly read. */
  async list(): Promise<McpTool[]> {
    this.invalidate();
    return [...(await this.#table()).values()];
  }

  /** A tool by name; an unknown name reads the listing again once (a document learned since). */
  async find(name: string): Promise<McpTool | undefined> {
    const known = (await this.#table()).get(name);
    if (known !== undefined) return known;
    this.invalidate();
    return (await this.#table()).get(name);
  }

  #table(): Promise<Map<string, McpTool>> {
    if (this.#tools !== undefined) return Promise.resolve(this.#tools);
    this.#building ??= this.#build().then(
      (tools) => {
        this.#building = undefined;
        this.#tools = tools;
        return tools;
      },
      (error: unknown) => {
        this.#building = undefined;
        throw error;
      },
    );
    return this.#building;
  }

  async #build(): Promise<Map<string, McpTool>> {
    // Sorted by name then hash, so a name shared by two documents gets the same suffix on every process.
    const entries = (await this.#catalogue.entries()).sort(
      (a, b) => a.name.localeCompare(b.name) || a.hash.localeCompare(b.hash),
    );
    const tools = new Map<string, McpTool>();
    const naturalLanguage =
      this.#naturalLanguage ?? this.#receiver.capabilities.description?.answersNaturalLanguage() ?? false;
    if (naturalLanguage) {
      tools.set(ASK_TOOL, {
        name: ASK_TOOL,
        title: 'Ask',
        summary: 'Natural language',
        description:
          'Ask this Agora agent in natural language; in an MCP session, the next asks continue the same conversation.',
        inputSchema: {
          type: 'object',
          properties: { question: { type: 'string', description: 'What to ask, in plain words' } },
          required: ['question'],
        },
        wrapped: false,
        multiround: true,
      });
    }
    for (const entry of entries) {
      let name = toolNameOf(entry.name);
      if (tools.has(name)) name = `${name.slice(0, MAX_NAME - 9)}_${entry.hash.slice(0, 8)}`;
      tools.set(name, this.#toolOf(name, entry));
    }
    return tools;
  }

  #toolOf(name: string, entry: CatalogueEntry): McpTool {
    const schemas = this.#receiver.capabilities.description?.routineSchemas(entry.hash);
    const input = jsonSchemaOf(schemas?.input, 'input');
    const output = jsonSchemaOf(schemas?.output, 'output');
    const body = input ?? { description: `The query body, as the protocol "${entry.name}" describes it` };
    const wrapped = !isObjectSchema(input);
    return {
      name,
      title: entry.name,
      summary: entry.description,
      description: describe(entry.name, entry.description, entry.content),
      inputSchema: wrapped
        ? { type: 'object', properties: { body }, required: ['body'] }
        : (input as McpTool['inputSchema']),
      ...(isObjectSchema(output) ? { outputSchema: output } : {}),
      hash: entry.hash,
      wrapped,
      multiround: entry.multiround,
    };
  }
}

/** The Agora body a tool call's arguments stand for. */
export function bodyOfCall(tool: McpTool, args: Record<string, unknown> | undefined): JsonValue {
  if (tool.hash === undefined) return String(args?.question ?? '');
  if (tool.wrapped) return (args?.body ?? null) as JsonValue;
  return (args ?? {}) as JsonValue;
}
