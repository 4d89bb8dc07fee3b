import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, parseLossless } from '../../../src/bindings/roar/canonical.js';
import { parseKeepsNumbers, readRoarJson } from '../../../src/bindings/roar/read.js';

// A number as a sender may write it: integers, floats with and without a fraction, exponents, long digit runs.
const numberText = fc.oneof(
  fc.integer({ min: -1e6, max: 1e6 }).map(String),
  fc.integer({ min: -1e6, max: 1e6 }).map((value) => `${value}.0`),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((value) => JSON.stringify(value)),
  fc
    .tuple(fc.integer({ min: 1, max: 9 }), fc.integer({ min: -20, max: 20 }))
    .map(([mantissa, exponent]) => `${mantissa}e${exponent}`),
  fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }).map(String),
  fc.constantFrom('1710000000.0000001', '1795421919.812', '-0', '0.0', '1.50', '1E+2', '12345678901234567890'),
);

// Strings that look like numbers inside (hashes, DIDs) must not change the outcome either.
const stringText = fc.oneof(
  fc.string(),
  fc.stringMatching(/^[0-9a-f]{40}$/),
  fc.constantFrom('598e089', 'did:roar:agent:x-1e5', '1.0', 'a"b\\c'),
);

const jsonText: fc.Arbitrary<string> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    numberText,
    stringText.map((text) => JSON.stringify(text)),
    fc.constantFrom('true', 'false', 'null'),
    tie('array'),
    tie('object'),
  ),
  array: fc.array(tie('value'), { maxLength: 4 }).map((items) => `[${(items as string[]).join(', ')}]`),
  object: fc
    .array(fc.tuple(stringText, tie('value')), { maxLength: 4 })
    .map(
      (entries) =>
        `{${(entries as [string, string][]).map(([key, value]) => `${JSON.stringify(key)}: ${value}`).join(',')}}`,
    ),
})).object as fc.Arbitrary<string>;

describe('readRoarJson', () => {
  it('gives the same canonical JSON as the lossless reader, whichever way it reads', () => {
    fc.assert(
      fc.property(jsonText, (text) => {
        expect(canonicalJson(readRoarJson(text).value)).toBe(canonicalJson(parseLossless(text)));
      }),
      { numRuns: 2000 },
    );
  });

  it('takes JSON.parse for an ordinary message: fractional timestamps, small integers, hex hashes', () => {
    const message =
      '{"auth": {"signature": "hmac-sha256:ab12", "timestamp": 1795421919.812}, "id": "msg_1", "payload": {"body": {"value": 10}, "protocolHash": "1767a52a598e089d5e675fddbc8aec35403cd6b6"}, "timestamp": 1795421919.812}';
    expect(parseKeepsNumbers(message)).toBe(true);
    expect(readRoarJson(message).plain).toBe(true);
  });

  it('takes the lossless reader when a number would print back differently, or the nesting is too deep', () => {
    for (const text of [
      '{"a": 1.0}',
      '{"a": 1e3}',
      '{"a": [2.50e1]}',
      '{"a": 12345678901234567}',
      '{"a": 1710000000.0000001}',
      '{"a": 1e400}',
    ]) {
      expect(parseKeepsNumbers(text), text).toBe(false);
      expect(readRoarJson(text).plain, text).toBe(false);
    }
    expect(canonicalJson(readRoarJson('{"a": 1.0, "b": 1e3, "c": 12345678901234567}').value)).toBe(
      '{"a": 1.0, "b": 1000.0, "c": 12345678901234567}',
    );
    // Too deep for either: the lossless reader refuses it with its error (below).
    expect(parseKeepsNumbers(`${'['.repeat(101)}${']'.repeat(101)}`)).toBe(false);
    expect(parseKeepsNumbers(`${'['.repeat(100)}${']'.repeat(100)}`)).toBe(true);
  });

  it('takes JSON.parse for a wide message that is not deep (many brackets, a string holding more)', () => {
    const wide = `{"payload": {"rows": [${'{"a": [1, 2]}, '.repeat(500)}{"a": []}], "note": "${'['.repeat(150)}"}}`;
    expect(parseKeepsNumbers(wide)).toBe(true);
    expect(readRoarJson(wide).plain).toBe(true);
  });

  it("refuses malformed JSON and deep nesting with the lossless reader's errors", () => {
    expect(() => readRoarJson('{"a": }')).toThrow(/Invalid JSON: unexpected character at position 6/);
    expect(() => readRoarJson(`${'['.repeat(200)}${']'.repeat(200)}`)).toThrow(/nesting deeper than 100/);
  });
});
