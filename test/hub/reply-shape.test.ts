import { describe, expect, it } from 'vitest';
import { parseShape, replyShapeOf, shapeMismatch } from '../../src/hub/reply-shape.js';
import { ROOM_DOCUMENT } from '../../src/hub/rooms/document.js';

describe('reply shapes of protocol documents', () => {
  it('reads the notation documents use: types, optional keys, literals, unions and lists', () => {
    const shape = parseShape(
      '{"message": string, "next"?: "@name", "done"?: boolean, "kind": "agent" | "person", "tags": [string]}',
    )!;
    expect(shapeMismatch(shape, { message: 'hi', kind: 'agent', tags: ['a'] })).toBeUndefined();
    expect(shapeMismatch(shape, { message: 'hi', kind: 'agent', tags: [1] })).toBe(
      'the reply.tags[0] is number, not string',
    );
    expect(shapeMismatch(shape, { kind: 'agent', tags: [] })).toBe('the reply.message is missing');
    expect(shapeMismatch(shape, { message: 'hi', done: 'yes', kind: 'agent', tags: [] })).toBe(
      'the reply.done is string, not boolean',
    );
    expect(shapeMismatch(shape, 'plain text')).toBe('the reply is not an object');
  });

  it('finds the reply a document states, and checks nothing where it states none in the notation', () => {
    expect(replyShapeOf(ROOM_DOCUMENT)).toEqual(parseShape('{"message": string, "next"?: "@name", "done"?: boolean}'));
    expect(replyShapeOf('The receiver replies with JSON.')).toBeUndefined();
    expect(replyShapeOf('The receiver replies `{"value": number, oops}`')).toBeUndefined();
    expect(parseShape('{"a": number')).toBeUndefined();
    expect(parseShape(`${'['.repeat(50)}string${']'.repeat(50)}`)).toBeUndefined();
  });
});
