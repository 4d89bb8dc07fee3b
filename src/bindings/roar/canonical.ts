// ROAR's canonical JSON: Python's `json.dumps(obj, sort_keys=True, separators=(", ", ": "))` with its default
// ensure_ascii, reproduced byte for byte. Numbers are read losslessly from the sender's bytes, because
// `JSON.parse` cannot tell `1710000000.0` (a Python float) from `1710000000` (a Python int).
import { AgoraError } from '../../errors.js';
import type { JsonValue } from '../../schemas.js';

/** A JSON number kept as the text it was written with (`1710000000.0` stays a float, `42` an integer). */
export class RawNumber {
  constructor(readonly text: string) {}

  /** The number's value as JavaScript reads it. */
  get value(): number {
    return Number(this.text);
  }

  toJSON(): number {
    return this.value;
  }

  /** A number JSON.parse read, as the text Python would print back for it (a fraction, or an exact integer). */
  static of(value: number): RawNumber {
    return new RawNumber(JSON.stringify(value));
  }
}

/** A JSON value as the lossless reader returns it: numbers as {@link RawNumber}, objects without a prototype. */
export type LosslessValue =
  string | boolean | null | RawNumber | JsonValue | LosslessValue[] | { [key: string]: LosslessValue };

/** Deepest nesting the reader accepts (a walk of the value must never overflow the stack). */
export const MAX_LOSSLESS_DEPTH = 100;

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const PLAIN_ASCII = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const SURROGATE = /[\ud800-\udfff]/;
const PLAIN_RUN = /[^"\\\u0000-\u001f]*/y;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/**
 * Reads JSON text without losing any number's form; strict RFC 8259 grammar, duplicate keys keep the last
 * (as Python does). Throws `AgoraError('BAD_REQUEST')` on malformed text or nesting deeper than 100.
 */
export function parseLossless(text: string): LosslessValue {
  let index = 0;
  const fail = (what: string): never => {
    throw new AgoraError('BAD_REQUEST', `Invalid JSON: ${what} at position ${index}`);
  };
  const skipSpace = () => {
    for (;;) {
      const code = text.charCodeAt(index);
      if (code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09) index++;
      else return;
    }
  };
  const readString = (): string => {
    index++; // the opening quote
    let result = '';
    for (;;) {
      PLAIN_RUN.lastIndex = index;
      PLAIN_RUN.exec(text);
      result += text.slice(index, PLAIN_RUN.lastIndex);
      index = PLAIN_RUN.lastIndex;
      const char = text[index];
      if (char === '"') {
        index++;
        return result;
      }
      if (char !== '\\') return fail(char === undefined ? 'unterminated string' : 'control character in string');
      const escape = text[index + 1];
      if (escape === 'u') {
        const hex = text.slice(index + 2, index + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) return fail('bad \\u escape');
        result += String.fromCharCode(Number.parseInt(hex, 16));
        index += 6;
      } else {
        const decoded = escape === undefined ? undefined : ESCAPES[escape];
        if (decoded === undefined) return fail('bad escape');
        result += decoded;
        index += 2;
      }
    }
  };
  const readValue = (depth: number): LosslessValue => {
    skipSpace();
    const char = text[index];
    if (char === '{' || char === '[') {
      if (depth >= MAX_LOSSLESS_DEPTH) fail(`nesting deeper than ${MAX_LOSSLESS_DEPTH}`);
      index++;
      skipSpace();
      if (char === '[') {
        const items: LosslessValue[] = [];
        if (text[index] === ']') {
          index++;
          return items;
        }
        for (;;) {
          items.push(readValue(depth + 1));
          skipSpace();
          const next = text[index++];
          if (next === ']') return items;
          if (next !== ',') fail('expected , or ]');
        }
      }
      const object: { [key: string]: LosslessValue } = Object.create(null) as { [key: string]: LosslessValue };
      if (text[index] === '}') {
        index++;
        return object;
      }
      for (;;) {
        skipSpace();
        if (text[index] !== '"') fail('expected a key');
        const key = readString();
        skipSpace();
        if (text[index++] !== ':') fail('expected :');
        object[key] = readValue(depth + 1);
        skipSpace();
        const next = text[index++];
        if (next === '}') return object;
        if (next !== ',') fail('expected , or }');
      }
    }
    if (char === '"') return readString();
    // A number first, by its first character (most values of a large message are): a sticky test, no match array.
    NUMBER.lastIndex = index;
    if ((char === '-' || (char !== undefined && char >= '0' && char <= '9')) && NUMBER.test(text)) {
      const start = index;
      index = NUMBER.lastIndex;
      return new RawNumber(text.slice(start, index));
    }
    if (text.startsWith('true', index)) return ((index += 4), true);
    if (text.startsWith('false', index)) return ((index += 5), false);
    if (text.startsWith('null', index)) return ((index += 4), null);
    return fail(char === undefined ? 'unexpected end' : 'unexpected character');
  };
  const value = readValue(0);
  skipSpace();
  if (index !== text.length) fail('trailing characters');
  return value;
}

/** A lossless value as plain JSON (numbers become JavaScript numbers); objects get ordinary prototypes. */
export function toPlain(value: LosslessValue): JsonValue {
  if (value instanceof RawNumber) return value.value;
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(toPlain);
  const plain: { [key: string]: JsonValue } = {};
  for (const key of Object.keys(value)) {
    // A key named __proto__ must stay data, never become the prototype (defineProperty only there: it is slow).
    if (key === '__proto__')
      Object.defineProperty(plain, key, {
        value: toPlain(value[key] as LosslessValue),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    else plain[key] = toPlain(value[key] as LosslessValue);
  }
  return plain;
}

/** Python's `repr(float)`: the shortest digits that round-trip, fixed between 1e-4 and 1e16, else `1e+16` style. */
export function pythonFloat(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? 'Infinity' : '-Infinity';
  if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0';
  const magnitude = Math.abs(value);
  // Between 1e-4 and 1e16 JavaScript prints the same shortest digits in fixed notation: only `.0` may be missing.
  if (magnitude >= 1e-4 && magnitude < 1e16) {
    const text = String(value);
    return text.includes('.') ? text : `${text}.0`;
  }
  const sign = value < 0 ? '-' : '';
  // toExponential() without an argument gives the shortest round-trip digits, as Python's repr does.
  const [mantissa, exponentText] = Math.abs(value).toExponential().split('e') as [string, string];
  const digits = mantissa.replace('.', '');
  const exponent = Number(exponentText);
  if (exponent < -4 || exponent >= 16) {
    const head = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${head}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0');
  const fraction = digits.slice(exponent + 1);
  return `${sign}${whole}.${fraction || '0'}`;
}

/** How Python prints a number it read from this JSON text: integers exactly, floats by `repr`. */
export function pythonNumber(text: string): string {
  if (/^-?\d+$/.test(text)) return text === '-0' ? '0' : text;
  return pythonFloat(Number(text));
}

/** Python's `json.dumps` string form with `ensure_ascii`: every non-ASCII UTF-16 unit as `\uXXXX`. */
export function pythonString(value: string): string {
  if (PLAIN_ASCII.test(value)) return `"${value}"`;
  let result = '"';
  let start = 0;
  for (let index = 0; index < value.length; index++) {
    const code = value.charCodeAt(index);
    if (code >= 0x20 && code < 0x7f && code !== 0x22 && code !== 0x5c) continue;
    result += value.slice(start, index);
    start = index + 1;
    if (code === 0x22) result += '\\"';
    else if (code === 0x5c) result += '\\\\';
    else if (code === 0x0a) result += '\\n';
    else if (code === 0x0d) result += '\\r';
    else if (code === 0x09) result += '\\t';
    else if (code === 0x08) result += '\\b';
    else if (code === 0x0c) result += '\\f';
    else result += `\\u${code.toString(16).padStart(4, '0')}`;
  }
  return `${result}${value.slice(start)}"`;
}

/** Python's ordering of str keys: by code point (JavaScript's default sort compares UTF-16 units). */
function compareCodePoints(left: string, right: string): number {
  const length = Math.min(left.length, right.length);
  for (let index = 0; index < length; index++) {
    const a = left.codePointAt(index)!;
    const b = right.codePointAt(index)!;
    if (a !== b) return a - b;
    if (a > 0xffff) index++;
  }
  return left.length - right.length;
}

/** Whether a key holds a surrogate (a loop: no closure per object serialized). */
function anySurrogate(keys: readonly string[]): boolean {
  for (const key of keys) if (SURROGATE.test(key)) return true;
  return false;
}

/**
 * Serializes as ROAR's canonical JSON (also valid JSON for the wire). Plain numbers print as `JSON.stringify`
 * would send them and then as Python would re-print what it read, so the bytes sent and the bytes signed agree.
 * @example canonicalJson({ b: 1, a: new RawNumber('1.0') }) // '{"a": 1.0, "b": 1}'
 */
export function canonicalJson(value: LosslessValue | undefined): string {
  // Strings first: most of a message's values (and every key) are strings.
  if (typeof value === 'string') return pythonString(value);
  if (value === null || value === undefined) return 'null';
  if (value instanceof RawNumber) return pythonNumber(value.text);
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      // As pythonNumber(JSON.stringify(value)) would print it, without the text in between: an integer below 1e21
      // (JSON.stringify's digits, `-0` as `0`), else Python's float repr.
      if (!Number.isFinite(value)) return 'null';
      return Number.isInteger(value) && Math.abs(value) < 1e21
        ? value === 0
          ? '0'
          : String(value)
        : pythonFloat(value);
  }
  if (Array.isArray(value)) {
    let result = '[';
    for (let index = 0; index < value.length; index++)
      result += (index === 0 ? '' : ', ') + canonicalJson(value[index] as LosslessValue);
    return `${result}]`;
  }
  const object = value as { [key: string]: LosslessValue };
  const keys = Object.keys(object);
  if (keys.length === 0) return '{}';
  // UTF-16 order is code point order unless a key holds a surrogate: the native sort then suffices.
  if (keys.length > 1) keys.sort(anySurrogate(keys) ? compareCodePoints : undefined);
  let result = '{';
  let first = true;
  for (const key of keys) {
    const item = object[key];
    if (item === undefined) continue;
    result += `${first ? '' : ', '}${pythonString(key)}: ${canonicalJson(item)}`;
    first = false;
  }
  return `${result}}`;
}
