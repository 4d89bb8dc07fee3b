import { describe, expect, it } from 'vitest';
import { MAX_BODY_DEPTH, parseFollowUpRequest, parseQueryRequest } from '../src/schemas.js';

const bytes = (text: string) => Buffer.from(text);

describe('parseQueryRequest', () => {
  it('keeps the known fields of a query, typed by the schema', () => {
    expect(
      parseQueryRequest(bytes('{"protocolHash": null, "body": {"a": 1}, "multiround": true, "extra": 1}'), 1024),
    ).toEqual({ protocolHash: null, body: { a: 1 }, multiround: true });
  });

  it('refuses a body over the size cap with REQUEST_TOO_LARGE, before parsing it', () => {
    expect(() => parseQueryRequest(bytes('{"body": "0123456789"}'), 8)).toThrow(
      expect.objectContaining({ code: 'REQUEST_TOO_LARGE' }),
    );
  });

  it('refuses nesting deeper than the limit, and names each bad field', () => {
    const deep = `{"body": ${'['.repeat(MAX_BODY_DEPTH + 1)}${']'.repeat(MAX_BODY_DEPTH + 1)}}`;
    expect(() => parseQueryRequest(bytes(deep), 1 << 20)).toThrow(
      `Request body is nested deeper than ${MAX_BODY_DEPTH} levels`,
    );
    // Many brackets are not deep nesting, and brackets inside a string are no nesting at all.
    const wide = `{"body": [${Array.from({ length: 150 }, () => '{"a": []}').join(', ')}]}`;
    expect((parseQueryRequest(bytes(wide), 1 << 20).body as unknown[]).length).toBe(150);
    const quoted = `{"body": "${'['.repeat(MAX_BODY_DEPTH * 2)}"}`;
    expect(parseQueryRequest(bytes(quoted), 1 << 20).body).toBe('['.repeat(MAX_BODY_DEPTH * 2));
    expect(() => parseQueryRequest(bytes('{"protocolHash": 1}'), 1024)).toThrow(
      'protocolHash must be a string or null; body is required',
    );
    expect(() => parseQueryRequest(bytes('\ufeff[1]'), 1024)).toThrow('Request body must be a JSON object');
  });

  it('refuses invalid UTF-8 anywhere, and keeps a replacement character the peer really sent', () => {
    const invalid = (raw: number[]) => Buffer.concat([bytes('{"body": "a'), Buffer.from(raw), bytes('b"}')]);
    for (const raw of [[0xc3, 0x28], [0xff], [0xed, 0xa0, 0x80], [0xe2, 0x82]]) {
      expect(() => parseQueryRequest(invalid(raw), 1024)).toThrow('Request body is not valid UTF-8');
    }
    // Also past a character outside Latin-1, where the decoded text is two bytes wide.
    expect(() =>
      parseQueryRequest(Buffer.concat([bytes('{"body": "€'), Buffer.from([0xff]), bytes('"}')]), 1024),
    ).toThrow('Request body is not valid UTF-8');
    expect(parseQueryRequest(bytes('{"body": "\ufffd and é"}'), 1024).body).toBe('\ufffd and é');
  });
});

describe('parseFollowUpRequest', () => {
  it('keeps only what the receiver reads, and prefixes zod messages that do not name their field', () => {
    expect(parseFollowUpRequest(bytes('{"body": 2, "status": "success", "multiround": true}'), 1024)).toEqual({
      body: 2,
    });
    expect(() => parseFollowUpRequest(bytes('{"body": 1, "protocolSources": [1]}'), 1024)).toThrow(
      /^protocolSources\.0: /,
    );
  });
});
