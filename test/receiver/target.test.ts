import { describe, expect, it } from 'vitest';
import { hashText } from '../../src/protocol/document.js';
import { QueryTargets, recordHashOf, targetOf, targetOfRecord } from '../../src/receiver/target.js';

const TEXT = '---\nname: A\ndescription: B\nmultiround: false\n---\nx\n';

describe('targetOf', () => {
  it('resolves natural language, negotiation, a hash in hex or base64, and a malformed hash', () => {
    expect(targetOf(undefined)).toEqual({ kind: 'natural' });
    expect(targetOf(null)).toEqual({ kind: 'natural' });
    expect(targetOf('negotiation')).toEqual({ kind: 'negotiation' });
    const base64 = hashText(TEXT, 'base64');
    expect(targetOf(base64)).toEqual({ kind: 'protocol', hash: hashText(TEXT), raw: base64 });
    expect(targetOf(hashText(TEXT).toUpperCase())).toMatchObject({ kind: 'protocol', hash: hashText(TEXT) });
    expect(targetOf('not a hash')).toEqual({ kind: 'malformed', raw: 'not a hash' });
  });

  it('round-trips through a stored record', () => {
    for (const value of [null, 'negotiation', hashText(TEXT)]) expect(recordHashOf(targetOfRecord(value))).toBe(value);
  });
});

describe('QueryTargets', () => {
  it('keeps the last target per instance: two receivers never share one', () => {
    const one = new QueryTargets();
    const other = new QueryTargets();
    const hex = hashText(TEXT);
    const first = one.of(hex);
    expect(one.of(hex)).toBe(first);
    expect(other.of(hex)).not.toBe(first);
    expect(other.of(hex)).toEqual(first);
    expect(one.of('not a hash')).toEqual({ kind: 'malformed', raw: 'not a hash' });
    expect(one.of(null)).toEqual({ kind: 'natural' });
  });
});
