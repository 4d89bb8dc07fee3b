import { describe, expect, it } from 'vitest';
import {
  documentFileName,
  encodeHash,
  formatDocument,
  hashText,
  normalizeHash,
  parseDocument,
} from '../../src/protocol/document.js';

const WEATHER =
  '---\nname: Weather\ndescription: Weather lookup\nmultiround: false\n---\n\nSender sends {"city": str}. Receiver replies {"t": int}.\n';

describe('hash vectors of the spec', () => {
  const vectors: [string, string, string][] = [
    ['hello', 'qvTGHdzF6KLavt4PO0gs2a6pQ00=', 'aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d'],
    [WEATHER, 'KBRxKxoSacGAIItZnNXhezKsM5U=', '2814712b1a1269c180208b599cd5e17b32ac3395'],
    [WEATHER.replace(/\n/g, '\r\n'), 'cini13j+Ycma82KlyHnP0BW4B2Y=', '7229e2d778fe61c99af362a5c879cfd015b80766'],
    [
      '---\nname: Météo\ndescription: x\nmultiround: false\n---\nè\n',
      '+CfrSwwA0jAh67mu1aia4660+Ss=',
      'f827eb4b0c00d23021ebb9aed5a89ae3aeb4f92b',
    ],
  ];
  it.each(vectors)('hashes %j in both encodings', (input, base64, hex) => {
    expect(hashText(input, 'base64')).toBe(base64);
    expect(hashText(input)).toBe(hex);
    expect(hashText(Buffer.from(input, 'utf8'))).toBe(hex);
    expect(normalizeHash(base64)).toBe(hex);
    expect(normalizeHash(hex.toUpperCase())).toBe(hex);
    expect(encodeHash(hex, 'base64')).toBe(base64);
  });

  it('accepts URL-safe base64 and refuses what is no hash', () => {
    expect(normalizeHash('cini13j-Ycma82KlyHnP0BW4B2Y=')).toBe('7229e2d778fe61c99af362a5c879cfd015b80766');
    for (const bad of ['', 'negotiation', 'abc', 'z'.repeat(40), 'qvTGHdzF6KLavt4PO0gs2a6pQ0==x'])
      expect(normalizeHash(bad)).toBeUndefined();
  });
});

describe('parseDocument', () => {
  it('parses the two-dash layout and keeps other keys', () => {
    const document = parseDocument(
      '---\nname: A\ndescription: B\nmultiround: true\nversion: 2\nsources: [x]\n---\nText\n',
    );
    expect(document.metadata).toEqual({ name: 'A', description: 'B', multiround: true, version: 2, sources: ['x'] });
    expect(document.content).toBe('Text\n');
  });

  it('parses the beginner layout (metadata, one dash line, text)', () => {
    const document = parseDocument('name: A\ndescription: B\nmultiround: false\n---\nThe text.\n');
    expect(document.metadata.name).toBe('A');
    expect(document.content).toBe('The text.\n');
  });

  it('hashes CRLF and BOM documents as they are, and parses them', () => {
    const crlf = WEATHER.replace(/\n/g, '\r\n');
    expect(parseDocument(crlf).hash).toBe('7229e2d778fe61c99af362a5c879cfd015b80766');
    expect(parseDocument(crlf).metadata.name).toBe('Weather');
    const bom = `\uFEFF${WEATHER}`;
    expect(parseDocument(bom).metadata.name).toBe('Weather');
    expect(parseDocument(bom).hash).toBe(hashText(bom));
    expect(parseDocument(bom).hash).not.toBe('2814712b1a1269c180208b599cd5e17b32ac3395');
  });

  it('says a missing field is missing, and a field of the wrong type is of the wrong type', () => {
    expect(() => parseDocument('---\nname: A\nmultiround: false\n---\n')).toThrowError(
      /✖ description is missing\n  → at description/,
    );
    expect(() => parseDocument('---\nname: A\nmultiround: false\n---\n')).not.toThrowError(/must be a string/);
    expect(() => parseDocument('---\nname: A\ndescription: 3\nmultiround: false\n---\n')).toThrowError(
      /description must be a string/,
    );
    expect(() => parseDocument('---\ndescription: B\nmultiround: false\n---\n')).toThrowError(/name is missing/);
    expect(() => parseDocument('---\nname: A\ndescription: B\n---\n')).toThrowError(
      /multiround is missing \(true or false required\)/,
    );
  });

  it('keeps dates as strings', () => {
    expect(
      parseDocument('---\nname: A\ndescription: B\nmultiround: false\ncreated: 2025-04-25\n---\n').metadata.created,
    ).toBe('2025-04-25');
  });

  it.each([
    ['invalid YAML', '---\nname: [\n---\n', /invalid front matter/],
    ['missing fields', '---\nname: A\n---\ntext', /description.*multiround/s],
    ['empty name', '---\nname: ""\ndescription: B\nmultiround: false\n---\n', /name must not be empty/],
    ['multiround not boolean', '---\nname: A\ndescription: B\nmultiround: yes\n---\n', /multiround must be a boolean/],
    [
      'JavaScript front matter',
      '---js\n{ name: "A", description: "B", multiround: false }\n---\n',
      /"js" is not allowed/,
    ],
    ['JavaScript engine by tag', '---javascript\nmodule.exports = {}\n---\n', /not allowed/],
    [
      'a custom tag',
      '---\nname: !!js/function "function(){}"\ndescription: B\nmultiround: false\n---\n',
      /invalid front matter/,
    ],
    ['an unclosed front matter', '---\nname: A\ndescription: B\nmultiround: false\n', /not closed/],
    ['no front matter at all', 'just text', /no front matter/],
    ['a list as front matter', '---\n- a\n---\n', /YAML mapping/],
  ])('refuses %s with an error naming the file', (_, text, reason) => {
    expect(() => parseDocument(text, 'protocols/x.md')).toThrowError(/^protocols\/x\.md: /);
    expect(() => parseDocument(text, 'protocols/x.md')).toThrowError(reason);
  });

  it('does not share metadata between parses of the same text (gray-matter cache)', () => {
    const first = parseDocument(WEATHER);
    (first.metadata as Record<string, unknown>).name = 'changed';
    expect(parseDocument(WEATHER).metadata.name).toBe('Weather');
  });

  it('writes the two-dash layout that parses back', () => {
    const text = formatDocument({ name: 'Météo du jour', description: 'x: y', multiround: false }, 'Body.');
    const document = parseDocument(text);
    expect(document.metadata.name).toBe('Météo du jour');
    expect(text.startsWith('---\n')).toBe(true);
    expect(documentFileName(document.metadata)).toBe('meteo-du-jour.md');
  });
});
