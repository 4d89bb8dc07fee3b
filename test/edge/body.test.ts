import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { readBody } from '../../src/edge/body.js';

function request(headers: Record<string, string> = {}): IncomingMessage {
  const message = new IncomingMessage(new Socket());
  message.headers = headers;
  return message;
}

describe('readBody', () => {
  it('joins the chunks, and gives the same body when asked twice while reading', async () => {
    const incoming = request();
    const first = readBody(incoming, 100);
    const second = readBody(incoming, 100);
    incoming.push(Buffer.from('{"a":'));
    incoming.push(Buffer.from('1}'));
    incoming.push(null);
    expect((await first).toString()).toBe('{"a":1}');
    expect(second).toBe(first);
    // Once read, the body is kept, not read again.
    expect(await readBody(incoming, 100)).toBe(await first);
  });

  it('refuses a declared or streamed size past the cap, and a client gone before the end', async () => {
    await expect(readBody(request({ 'content-length': '101' }), 100)).rejects.toMatchObject({
      code: 'REQUEST_TOO_LARGE',
    });
    const streamed = request();
    const tooLarge = readBody(streamed, 4);
    streamed.push(Buffer.from('12345'));
    await expect(tooLarge).rejects.toMatchObject({ code: 'REQUEST_TOO_LARGE' });
    const gone = request();
    const aborted = readBody(gone, 100);
    gone.push(Buffer.from('{"a"'));
    gone.destroy();
    await expect(aborted).rejects.toMatchObject({ code: 'BAD_REQUEST', message: 'Request aborted by the client' });
  });
});
