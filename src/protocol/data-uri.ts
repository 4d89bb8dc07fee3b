// `data:` URIs (RFC 2397, spec §3): decoding a protocol source, encoding a document to send inline.

// RFC 2397: an omitted media type means text/plain.
const TEXT_MEDIA_TYPES = new Set(['', 'text/plain', 'text/markdown']);

/**
 * Decodes a `data:` URI (both forms of spec §3); undefined for other media types / malformed. Returns raw bytes
 * (Buffer).
 * @example decodeDataUri('data:text/plain;charset=utf-8,1%2B1') // Buffer of "1+1"
 */
export function decodeDataUri(uri: string): Buffer | undefined {
  if (!/^data:/i.test(uri)) return undefined;
  const comma = uri.indexOf(',');
  if (comma < 0) return undefined;
  const [mediaType = '', ...parameters] = uri
    .slice('data:'.length, comma)
    .split(';')
    .map((part) => part.trim().toLowerCase());
  if (!TEXT_MEDIA_TYPES.has(mediaType)) return undefined;
  // A raw `#` is kept as data, not cut as a fragment: Markdown headings sent unencoded must still hash right.
  const data = percentDecode(uri.slice(comma + 1));
  if (data === undefined) return undefined;
  return parameters.at(-1) === 'base64' ? decodeBase64(data) : data;
}

function hexDigit(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x41 + 10;
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x61 + 10;
  return -1;
}

// Byte-level percent-decoding: `%C3%A9` becomes two bytes rather than two Latin-1 characters, `+` stays `+`
// (this is not form encoding), and raw non-ASCII text is taken as its UTF-8 bytes.
function percentDecode(text: string): Buffer | undefined {
  const input = Buffer.from(text, 'utf8');
  const output = Buffer.alloc(input.length);
  let length = 0;
  for (let index = 0; index < input.length; index += 1) {
    const byte = input[index] ?? 0;
    if (byte !== 0x25) {
      output[length++] = byte;
      continue;
    }
    const high = hexDigit(input[index + 1] ?? -1);
    const low = hexDigit(input[index + 2] ?? -1);
    if (high < 0 || low < 0) return undefined;
    output[length++] = high * 16 + low;
    index += 2;
  }
  return output.subarray(0, length);
}

// Buffer's own base64 decoder skips junk silently; a malformed source must be refused instead.
function decodeBase64(data: Buffer): Buffer | undefined {
  const text = data.toString('latin1').replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(text) || text.length % 4 === 1) return undefined;
  return Buffer.from(text, 'base64');
}

/**
 * Encodes a document text as a `data:text/plain;charset=utf-8,<percent-encoded>` URI the way Python's
 * urllib.parse.quote does (safe chars: letters, digits, `_.-~/`).
 * @example encodeDataUri('hello world/+') // 'data:text/plain;charset=utf-8,hello%20world/%2B'
 */
export function encodeDataUri(text: string): string {
  const parts: string[] = [];
  for (const byte of Buffer.from(text, 'utf8')) {
    const safe =
      (byte >= 0x30 && byte <= 0x39) ||
      (byte >= 0x41 && byte <= 0x5a) ||
      (byte >= 0x61 && byte <= 0x7a) ||
      byte === 0x5f || // _
      byte === 0x2e || // .
      byte === 0x2d || // -
      byte === 0x7e || // ~
      byte === 0x2f; // /
    parts.push(safe ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`);
  }
  return `data:text/plain;charset=utf-8,${parts.join('')}`;
}
