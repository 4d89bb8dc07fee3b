// The reply a protocol document allows, read from its text: documents say "The receiver replies JSON `{…}`" in a
// small notation (`{"value": number, "unit": string}`, `"next"?: "@name"`, `[string]`, `"a" | "b"`). A chain checks a
// hop's reply against it, so an agent answering something else is a failed hop, not a success.
import type { JsonValue } from '../schemas.js';

/** A reply shape: a JSON type, a literal, a list of one shape, an object of keys (some optional), or a union. */
export type Shape =
  | { kind: 'type'; type: 'number' | 'string' | 'boolean' | 'null' | 'any' | 'object' | 'array' }
  | { kind: 'literal'; value: string | number | boolean | null }
  | { kind: 'list'; item: Shape }
  | { kind: 'object'; keys: { name: string; optional: boolean; shape: Shape }[] }
  | { kind: 'union'; options: Shape[] };

const TYPES = new Set(['number', 'string', 'boolean', 'null', 'any', 'object', 'array', 'integer']);

/** Parses the notation; undefined when the text is not in it (then nothing is checked). */
export function parseShape(text: string): Shape | undefined {
  let index = 0;
  const space = () => {
    while (/\s/.test(text[index] ?? '')) index++;
  };
  const expect = (char: string): boolean => {
    space();
    if (text[index] !== char) return false;
    index++;
    return true;
  };
  const string = (): string | undefined => {
    space();
    const match = /^"((?:[^"\\]|\\.)*)"/.exec(text.slice(index));
    if (!match) return undefined;
    index += match[0].length;
    return match[1]!;
  };
  const single = (depth: number): Shape | undefined => {
    if (depth > 20) return undefined;
    space();
    const char = text[index];
    if (char === '{') {
      index++;
      const keys: { name: string; optional: boolean; shape: Shape }[] = [];
      if (expect('}')) return { kind: 'object', keys };
      for (;;) {
        const name = string();
        if (name === undefined) return undefined;
        space();
        const optional = text[index] === '?';
        if (optional) index++;
        if (!expect(':')) return undefined;
        const shape = union(depth + 1);
        if (shape === undefined) return undefined;
        keys.push({ name, optional, shape });
        if (expect('}')) return { kind: 'object', keys };
        if (!expect(',')) return undefined;
      }
    }
    if (char === '[') {
      index++;
      const item = union(depth + 1);
      if (item === undefined || !expect(']')) return undefined;
      return { kind: 'list', item };
    }
    if (char === '"') {
      const value = string();
      return value === undefined ? undefined : { kind: 'literal', value };
    }
    const word = /^[A-Za-z]+/.exec(text.slice(index))?.[0];
    if (word === undefined) return undefined;
    index += word.length;
    if (word === 'true' || word === 'false') return { kind: 'literal', value: word === 'true' };
    if (!TYPES.has(word)) return undefined;
    return { kind: 'type', type: word === 'integer' ? 'number' : (word as 'number') };
  };
  const union = (depth: number): Shape | undefined => {
    const options: Shape[] = [];
    for (;;) {
      const shape = single(depth);
      if (shape === undefined) return undefined;
      options.push(shape);
      space();
      if (text[index] !== '|') break;
      index++;
    }
    return options.length === 1 ? options[0] : { kind: 'union', options };
  };
  const shape = union(0);
  space();
  return shape !== undefined && index === text.length ? shape : undefined;
}

/** The reply shape a document states ("replies JSON `{…}`", backticks or not), if it states one in the notation. */
export function replyShapeOf(documentText: string): Shape | undefined {
  const match = /\brepl(?:y|ies)\b[^{}.]{0,80}\{/i.exec(documentText);
  if (!match) return undefined;
  // The object runs to its matching brace (braces inside strings do not count), within 2,000 characters.
  const start = match.index + match[0].length - 1;
  let depth = 0;
  let quoted = false;
  for (let index = start; index < documentText.length && index < start + 2000; index++) {
    const char = documentText[index];
    if (quoted) {
      if (char === '\\') index++;
      else if (char === '"') quoted = false;
    } else if (char === '"') quoted = true;
    else if (char === '{') depth++;
    else if (char === '}' && --depth === 0) return parseShape(documentText.slice(start, index + 1));
  }
  return undefined;
}

/** Why a value does not fit a shape (the first fault, with its path), or undefined when it fits. Extra keys fit. */
export function shapeMismatch(shape: Shape, value: JsonValue | undefined, path = 'the reply'): string | undefined {
  switch (shape.kind) {
    case 'type': {
      if (shape.type === 'any') return undefined;
      const actual = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
      return actual === shape.type
        ? undefined
        : `${path} is ${value === undefined ? 'missing' : actual}, not ${shape.type}`;
    }
    case 'literal':
      // A literal string in a document is most often an example of a string ("@name"): any string fits it.
      if (typeof shape.value === 'string') return typeof value === 'string' ? undefined : `${path} is not a string`;
      return value === shape.value ? undefined : `${path} is not ${JSON.stringify(shape.value)}`;
    case 'list':
      if (!Array.isArray(value)) return `${path} is not a list`;
      for (let index = 0; index < value.length && index < 1000; index++) {
        const fault = shapeMismatch(shape.item, value[index], `${path}[${index}]`);
        if (fault) return fault;
      }
      return undefined;
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return `${path} is not an object`;
      for (const key of shape.keys) {
        const item = (value as Record<string, JsonValue>)[key.name];
        if (item === undefined) {
          if (key.optional) continue;
          return `${path}.${key.name} is missing`;
        }
        const fault = shapeMismatch(key.shape, item, `${path}.${key.name}`);
        if (fault) return fault;
      }
      return undefined;
    }
    case 'union':
      return shape.options.some((option) => shapeMismatch(option, value, path) === undefined)
        ? undefined
        : `${path} fits none of its allowed forms`;
  }
}
