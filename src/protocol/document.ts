import * as crypto from 'node:crypto';
import matter from 'gray-matter';
import YAML from 'yaml';
import { z } from 'zod';
import { slug } from '../_slug.js';
import { AgoraError } from '../errors.js';

/** The two encodings of a protocol hash in use (spec §1). */
export type HashEncoding = 'hex' | 'base64';

/** The metadata of a protocol document: three required keys, other keys kept. */
const protocolMetadataSchema = z
  .object({
    name: z
      .string({ error: (issue) => (issue.input === undefined ? 'name is missing' : 'name must be a string') })
      .trim()
      .min(1, { error: 'name must not be empty' }),
    description: z.string({
      error: (issue) => (issue.input === undefined ? 'description is missing' : 'description must be a string'),
    }),
    multiround: z.boolean({
      error: (issue) =>
        issue.input === undefined
          ? 'multiround is missing (true or false required)'
          : 'multiround must be a boolean (true or false)',
    }),
  })
  .catchall(z.unknown());

/** Metadata of a protocol document. */
export type ProtocolMetadata = z.infer<typeof protocolMetadataSchema>;

/** A parsed protocol document: its exact text, its hash and its parts. */
export type ProtocolDocument = {
  /** The exact text, as hashed. */
  readonly text: string;
  /** SHA1 of the exact UTF-8 bytes, 40 lowercase hex characters. */
  readonly hash: string;
  readonly metadata: ProtocolMetadata;
  /** The text after the front matter. */
  readonly content: string;
};

const YAML_OPTIONS = { schema: 'core', merge: false, maxAliasCount: 50, uniqueKeys: true } as const;

// Data only: an unresolved tag (`!!js/function`, a custom `!tag`) is refused, not turned into a string.
function parseYaml(source: string): unknown {
  const document = YAML.parseDocument(source, { ...YAML_OPTIONS, logLevel: 'silent' });
  const problem = document.errors[0] ?? document.warnings[0];
  if (problem) throw new Error(problem.message.split('\n')[0]);
  return document.toJS({ maxAliasCount: YAML_OPTIONS.maxAliasCount });
}

function refuseJavaScript(): never {
  throw new Error('JavaScript front matter is not allowed');
}

// A fresh options object per call: gray-matter caches by input when called without one.
function matterOptions() {
  return {
    engines: {
      yaml: {
        parse: (source: string) => parseYaml(source) as object,
        stringify: (data: object) => YAML.stringify(data),
      },
      js: { parse: refuseJavaScript },
      javascript: { parse: refuseJavaScript },
      coffee: { parse: refuseJavaScript },
      coffeescript: { parse: refuseJavaScript },
    },
    language: 'yaml',
  };
}

const oneShotHash = (
  crypto as { hash?: (algorithm: string, data: string | Uint8Array, encoding: HashEncoding) => string }
).hash;

/** SHA1 of the exact UTF-8 bytes of a document, hex (spec §1: no normalisation at all). */
export function hashText(text: string | Uint8Array, encoding: HashEncoding = 'hex'): string {
  // The one-shot crypto.hash (Node ≥ 20.12) skips the Hash object: under half the cost on small documents.
  if (oneShotHash) return oneShotHash('sha1', text, encoding);
  return crypto.createHash('sha1').update(text).digest(encoding);
}

const HEX = /^[0-9a-fA-F]{40}$/;
const BASE64 = /^[A-Za-z0-9+/\-_]{27}=?$/;

/**
 * A received hash, hex in any case or base64 (standard or URL-safe), as 40 lowercase hex characters;
 * `undefined` when it is neither.
 */
export function normalizeHash(hash: string): string | undefined {
  const value = hash.trim();
  if (HEX.test(value)) return value.toLowerCase();
  if (BASE64.test(value)) {
    const bytes = Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (bytes.length === 20) return bytes.toString('hex');
  }
  return undefined;
}

/** A hex hash in the requested encoding. */
export function encodeHash(hexHash: string, encoding: HashEncoding): string {
  return encoding === 'hex' ? hexHash : Buffer.from(hexHash, 'hex').toString('base64');
}

/** The encoding a received hash was written in. */
export function hashEncodingOf(hash: string): HashEncoding | undefined {
  const value = hash.trim();
  if (HEX.test(value)) return 'hex';
  if (BASE64.test(value)) return 'base64';
  return undefined;
}

function splitBeginnerLayout(text: string): { front: string; content: string } | undefined {
  // Beginner layout (seed 004): metadata first, one `---` line, then the text.
  const match = /^([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)([\s\S]*)$/.exec(text);
  if (!match) return undefined;
  return { front: match[1] ?? '', content: match[2] ?? '' };
}

// The front matter nearly every document has: `key: plain scalar` lines. Parsing it by hand is far cheaper than
// gray-matter + yaml on a cold start (an agent with 1,000 documents starts in a fraction of the time); anything
// beyond this subset (quotes, numbers, nulls, lists, comments, flow or block indicators) goes to the yaml parser,
// so the result is always the one the full parser gives.
const SIMPLE_KEY = /^[A-Za-z_][\w-]*$/;
/**
 * A one-line plain scalar with no indicator first (nor a digit, sign or dot: numbers go to the full parser) and
 * only characters YAML takes as they are: no controls, tabs, BOM, surrogates or non-characters.
 */
const SIMPLE_VALUE =
  /^[^\s!"#%&'*,:>?@[\]`{|}~0-9.+\-\x00-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff][^\t\x00-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff]*$/;
/** Keys and values the core schema reads as something else than that string (booleans are kept, as booleans). */
const CORE_WORDS = new Map<string, boolean | null>([
  ...['true', 'True', 'TRUE'].map((word) => [word, true] as const),
  ...['false', 'False', 'FALSE'].map((word) => [word, false] as const),
  ...['null', 'Null', 'NULL'].map((word) => [word, null] as const),
]);

/** The data of a simple front matter block, or undefined when the block needs the full YAML parser. */
function parseSimpleFrontMatter(block: string): Record<string, string | boolean> | undefined {
  const data: Record<string, string | boolean> = {};
  let keys = 0;
  for (const line of block.split('\n')) {
    if (line === '') continue;
    const colon = line.indexOf(': ');
    if (colon <= 0) return undefined;
    const key = line.slice(0, colon);
    if (!SIMPLE_KEY.test(key) || key === '__proto__' || CORE_WORDS.has(key) || Object.hasOwn(data, key))
      return undefined;
    let value = line.slice(colon + 2);
    if (value.endsWith(' ')) value = value.replace(/ +$/, '');
    // ` #` starts a comment, `: ` or a final `:` a nested mapping.
    if (!SIMPLE_VALUE.test(value) || value.includes(' #') || value.includes(': ') || value.endsWith(':'))
      return undefined;
    const word = CORE_WORDS.get(value);
    if (word === null) return undefined;
    data[key] = word ?? value;
    keys += 1;
  }
  return keys > 0 ? data : undefined;
}

/** The two-dash layout's data and content when its front matter is simple (see above), as gray-matter gives them. */
function splitSimple(unix: string): { data: Record<string, string | boolean>; content: string } | undefined {
  if (!unix.startsWith('---\n')) return undefined;
  // gray-matter closes the block at the first `\n---`; only a bare `---` line is the simple case.
  const close = unix.indexOf('\n---', 3);
  if (close === -1) return undefined;
  const after = close + 4;
  if (after < unix.length && unix[after] !== '\n') return undefined;
  const data = parseSimpleFrontMatter(unix.slice(4, close));
  if (!data) return undefined;
  return { data, content: unix.slice(after + 1) };
}

/**
 * The metadata {@link protocolMetadataSchema} gives for valid simple front matter (the common case), without the
 * schema's cost; undefined when the schema must decide (and word its error).
 */
function simpleMetadata(data: Record<string, string | boolean>): ProtocolMetadata | undefined {
  const { name, description, multiround } = data;
  if (typeof name !== 'string' || typeof description !== 'string' || typeof multiround !== 'boolean') return undefined;
  const trimmed = name.trim();
  if (!trimmed) return undefined;
  // The schema's order: its own keys first, then the others as they came.
  const metadata: ProtocolMetadata = { name: trimmed, description, multiround };
  for (const [key, value] of Object.entries(data)) if (!Object.hasOwn(metadata, key)) metadata[key] = value;
  return metadata;
}

// The text must be the exact bytes that were hashed: a BOM is kept (TextDecoder strips it by default), and bytes
// that are not UTF-8 are refused rather than replaced, so the text served and sent on hashes to the same digest.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Parses a protocol document in either layout of spec §1 and hashes its exact bytes.
 * @param origin names the document in errors (a file path, a URL).
 * @example const document = parseDocument(await readFile('protocols/weather.md', 'utf8'), 'weather.md');
 */
export function parseDocument(raw: string | Uint8Array, origin = 'protocol document'): ProtocolDocument {
  let text: string;
  try {
    text = typeof raw === 'string' ? raw : decoder.decode(raw);
  } catch {
    throw new AgoraError('INVALID_DOCUMENT', `${origin}: not valid UTF-8`);
  }
  const hash = hashText(raw);
  if (text.includes('\u0000')) throw new AgoraError('INVALID_DOCUMENT', `${origin}: not a text document`);
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;

  let data: unknown;
  let content: string;
  try {
    if (/^---[^\S\r\n]*\S/.test(body) && !/^---[^\S\r\n]*yaml[^\S\r\n]*\r?\n/i.test(body)) {
      throw new Error(`front matter language "${/^---\s*(\S+)/.exec(body)?.[1]}" is not allowed: use YAML`);
    }
    if (/^---[ \t]*\r?\n/.test(body)) {
      const unix = body.replace(/\r\n/g, '\n');
      if (!/^---[ \t]*\n(?:[\s\S]*?\n)?---[ \t]*(?:\n|$)/.test(unix)) {
        throw new Error('front matter is not closed by a `---` line');
      }
      const simple = splitSimple(unix);
      if (simple) {
        const metadata = simpleMetadata(simple.data);
        if (metadata) return { text, hash, metadata, content: simple.content };
      }
      const parsed = simple ?? matter(unix, matterOptions());
      data = parsed.data;
      content = parsed.content;
    } else {
      const split = splitBeginnerLayout(body);
      if (!split) throw new Error('no front matter: expected YAML metadata between `---` lines');
      data = parseYaml(split.front.replace(/\r\n/g, '\n'));
      content = split.content;
    }
  } catch (error) {
    if (error instanceof AgoraError) throw error;
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new AgoraError('INVALID_DOCUMENT', `${origin}: invalid front matter: ${reason}`, { cause: error });
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new AgoraError(
      'INVALID_DOCUMENT',
      `${origin}: front matter must be a YAML mapping with name, description and multiround`,
    );
  }
  const result = protocolMetadataSchema.safeParse(data);
  if (!result.success) {
    throw new AgoraError('INVALID_DOCUMENT', `${origin}: invalid metadata: ${z.prettifyError(result.error)}`);
  }
  return { text, hash, metadata: result.data, content };
}

/** Writes a document in the two-`---` layout (the one we always write). */
export function formatDocument(metadata: ProtocolMetadata, content: string): string {
  const front = YAML.stringify(metadata, { lineWidth: 0 }).trimEnd();
  const body = content.endsWith('\n') ? content : `${content}\n`;
  return `---\n${front}\n---\n${body.startsWith('\n') ? body : `\n${body}`}`;
}

/** A file name for a document: its name in kebab-case, `.md`. */
export function documentFileName(metadata: Pick<ProtocolMetadata, 'name'>): string {
  return `${slug(metadata.name, { maxLength: 60, fallback: 'protocol' })}.md`;
}
