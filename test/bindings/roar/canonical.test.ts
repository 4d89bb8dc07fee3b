import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  parseLossless,
  pythonFloat,
  RawNumber,
  toPlain,
  type LosslessValue,
} from '../../../src/bindings/roar/canonical.js';
import {
  ed25519Signature,
  hmacSignature,
  keyPairFromSeed,
  publicKeyFromHex,
  rawKeyHex,
  signingBody,
  verifyEd25519,
  verifyHmac,
} from '../../../src/bindings/roar/signing.js';

const golden = (name: string) => readFileSync(new URL(`../../fixtures/roar-golden/${name}`, import.meta.url), 'utf8');
const SECRET = 'roar-conformance-test-secret';

describe('ROAR golden fixtures (ProwlrBot/roar-protocol, tests/conformance/golden)', () => {
  for (const name of ['signature.json', 'signature-nested.json', 'signature-unicode.json']) {
    it(`reproduces ${name}: canonical JSON byte for byte and the HMAC`, () => {
      const fixture = parseLossless(golden(name)) as {
        inputs: LosslessValue;
        canonical_json: string;
        expected_signature: string;
        secret: string;
      };
      const body = canonicalJson(fixture.inputs);
      expect(body).toBe(fixture.canonical_json);
      expect(hmacSignature(body, fixture.secret)).toBe(fixture.expected_signature);
      expect(verifyHmac(body, fixture.expected_signature, SECRET)).toBe(true);
    });
  }

  it('verifies message.json: its auth signs the seven fields with auth.timestamp', () => {
    const message = parseLossless(golden('message.json')) as Record<string, LosslessValue> & {
      from: { did: string };
      to: { did: string };
      auth: { signature: string; timestamp: LosslessValue };
    };
    const body = signingBody({
      id: message.id!,
      from: message.from.did,
      to: message.to.did,
      intent: message.intent!,
      payload: message.payload!,
      context: message.context!,
      timestamp: message.auth.timestamp,
    });
    expect(verifyHmac(body, message.auth.signature, SECRET)).toBe(true);
    expect(verifyHmac(body, message.auth.signature, 'another secret')).toBe(false);
  });

  it('refuses a malformed HMAC signature without throwing: upper-case hex, a digit short or long, another prefix', () => {
    const body = canonicalJson({ a: 1 });
    const hex = hmacSignature(body, SECRET).slice('hmac-sha256:'.length);
    expect(verifyHmac(body, `hmac-sha256:${hex}`, SECRET)).toBe(true);
    for (const signature of [
      `hmac-sha256:${hex.toUpperCase()}`,
      `hmac-sha256:${hex.slice(1)}`,
      `hmac-sha256:${hex}0`,
      `hmac-sha512:${hex}`,
      `hmac-sha256:${hex.slice(1)}ā`,
    ]) {
      expect(verifyHmac(body, signature, SECRET), signature).toBe(false);
    }
  });

  it('reproduces delegation-token.json: capabilities sorted, false, integer and float forms', () => {
    const fixture = parseLossless(golden('delegation-token.json')) as {
      token: Record<string, LosslessValue>;
      canonical_json: string;
    };
    const token = { ...fixture.token, capabilities: [...(fixture.token.capabilities as string[])].sort() };
    expect(canonicalJson(token)).toBe(fixture.canonical_json);
  });

  it('round-trips identity.json and stream-event.json with their field names, DID format and float timestamp', () => {
    const identity = parseLossless(golden('identity.json')) as Record<string, LosslessValue>;
    expect(identity.did).toMatch(/^did:roar:agent:[a-z0-9-]+-[0-9a-f]{16}$/);
    expect(identity.public_key).toBeNull();
    expect(canonicalJson(parseLossless(canonicalJson(identity)))).toBe(canonicalJson(identity));
    const event = parseLossless(golden('stream-event.json')) as Record<string, LosslessValue>;
    expect(event.type).toBe('task_update');
    expect(canonicalJson(event)).toContain('"timestamp": 1710000000.0');
  });
});

describe('canonical JSON', () => {
  it('keeps integers and floats in the form they were sent', () => {
    expect(
      canonicalJson(
        parseLossless(
          '{"a": 42, "b": 42.0, "c": 1710000000.0, "d": 0.75, "e": -0, "f": 123456789012345678901234567890}',
        ),
      ),
    ).toBe('{"a": 42, "b": 42.0, "c": 1710000000.0, "d": 0.75, "e": 0, "f": 123456789012345678901234567890}');
  });

  it('prints floats as Python repr does', () => {
    expect([1e16, 1.5e16, 1e-5, 0.0001, 1234567890123456, 0.1 + 0.2, -2.5, 1e22, 5e-324].map(pythonFloat)).toEqual([
      '1e+16',
      '1.5e+16',
      '1e-05',
      '0.0001',
      '1234567890123456.0',
      '0.30000000000000004',
      '-2.5',
      '1e+22',
      '5e-324',
    ]);
    expect(canonicalJson(parseLossless('[1E2, 1.0e-7, 2e400]'))).toBe('[100.0, 1e-07, Infinity]');
  });

  it('escapes non-ASCII as ensure_ascii does, with surrogate pairs, and sorts keys by code point', () => {
    expect(canonicalJson({ é: 'café 😀', '\u007f': '\u0001\n"\\/', '\uffff': 1, '😀': 2 })).toBe(
      '{"\\u007f": "\\u0001\\n\\"\\\\/", "\\u00e9": "caf\\u00e9 \\ud83d\\ude00", "\\uffff": 1, "\\ud83d\\ude00": 2}',
    );
  });

  it('reads escapes, keeps the last of duplicate keys and keeps __proto__ as data', () => {
    const value = parseLossless('{"a": "\\u00e9\\ud83d\\ude00\\n", "a2": 1, "a2": 2, "__proto__": {"x": 1}}');
    expect(toPlain(value)).toEqual(JSON.parse('{"a": "é😀\\n", "a2": 2, "__proto__": {"x": 1}}'));
    expect(Object.getPrototypeOf(toPlain(value))).toBe(Object.prototype);
  });

  it('refuses malformed JSON and deep nesting with a clear error', () => {
    for (const text of [
      '',
      '{',
      '{"a" 1}',
      '[1,]',
      '01',
      '"\u0001"',
      '{"a": 1} x',
      'NaN',
      "{'a': 1}",
      '"\\x"',
      '[' + '['.repeat(200) + ']'.repeat(201),
    ]) {
      expect(() => parseLossless(text), text).toThrow(/Invalid JSON/);
    }
  });

  it('serializes plain JavaScript numbers the way Python will re-print them after reading JSON.stringify output', () => {
    expect(canonicalJson({ n: 10, f: 6.21, big: 1e21, raw: new RawNumber('1.50') })).toBe(
      '{"big": 1e+21, "f": 6.21, "n": 10, "raw": 1.5}',
    );
  });
});

describe('Ed25519', () => {
  it('signs and verifies as base64url without padding, and refuses another key or a changed body', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const body = signingBody({
      id: 'm1',
      from: 'did:roar:agent:a-0123456789abcdef',
      to: 'did:roar:agent:b-0123456789abcdef',
      intent: 'ask',
      payload: { text: 'hé', n: 42 },
      context: {},
      timestamp: new RawNumber('1710000000.0'),
    });
    const signature = ed25519Signature(body, privateKey);
    expect(signature).toMatch(/^ed25519:[A-Za-z0-9_-]{86}$/);
    const restored = keyPairFromSeed(rawKeyHex(privateKey), rawKeyHex(publicKey));
    expect(verifyEd25519(body, signature, publicKeyFromHex(rawKeyHex(publicKey)))).toBe(true);
    expect(verifyEd25519(body, ed25519Signature(body, restored.privateKey), publicKey)).toBe(true);
    expect(verifyEd25519(body.replace('42', '43'), signature, publicKey)).toBe(false);
    expect(verifyEd25519(body, signature, generateKeyPairSync('ed25519').publicKey)).toBe(false);
    expect(verifyEd25519(body, `${signature}=`, publicKey)).toBe(false);
  });
});
