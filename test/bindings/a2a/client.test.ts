import { afterAll, describe, expect, it } from 'vitest';
import { A2aClient } from '../../../src/bindings/a2a/client.js';
import { startA2aServer, type A2aTestServer } from '../../helpers/a2a-server.js';

describe("A2aClient, through @a2a-js/sdk's client, against @a2a-js/sdk's server", () => {
  const servers: A2aTestServer[] = [];
  afterAll(async () => {
    for (const server of servers) await server.close();
  });
  const start = async (version: '1.0' | '0.3') => {
    const server = await startA2aServer({
      name: 'echo',
      description: 'Echoes text back.',
      skills: [{ name: 'Echo', description: 'Says it again', tags: ['echo'] }],
      version,
      answer: (input) =>
        input === 'fail'
          ? { fail: true }
          : input === 'stream'
            ? { pieces: ['one ', 'two ', 'three'] }
            : `echo: ${input}`,
    });
    servers.push(server);
    return server;
  };

  for (const version of ['1.0', '0.3'] as const) {
    it(`reads the card, sends text and data, gets and cancels tasks (A2A ${version})`, async () => {
      const server = await start(version);
      const client = new A2aClient({ timeoutMs: 5000 });
      expect((await client.card(server.url)).skills.map((skill) => skill.name)).toEqual(['Echo']);
      const text = await client.send(server.url, { body: 'hello' });
      expect(text).toMatchObject({ result: 'echo: hello', state: 'completed' });
      expect(text.taskId).toEqual(expect.any(String));
      const data = await client.send(server.url, { body: { protocolHash: 'abc', body: { value: 1 } } });
      expect(data.result).toBe('echo: {"protocolHash":"abc","body":{"value":1}}');
      expect(server.received.at(-1)).toBe('{"protocolHash":"abc","body":{"value":1}}');
      expect((await client.getTask(server.url, text.taskId!)).result).toBe('echo: hello');
      await expect(client.getTask(server.url, 'no-such-task')).rejects.toThrow(
        /A2A GetTask at http:\/\/127\.0\.0\.1:\d+: \w+/,
      );
      await expect(client.send(server.url, { body: 'fail' })).rejects.toThrow(/ended failed/);
    });

    it(`streams an answer's pieces, then the whole answer (A2A ${version})`, async () => {
      const server = await start(version);
      const pieces: unknown[] = [];
      let done: unknown;
      for await (const piece of new A2aClient({ timeoutMs: 5000 }).stream(server.url, { body: 'stream' })) {
        if (piece.type === 'delta') pieces.push(piece.delta);
        else done = piece.answer;
      }
      expect(pieces).toEqual(['one ', 'two ', 'three']);
      expect(done).toMatchObject({ result: 'one two three', state: 'completed' });
    });
  }

  it('names the method and URL when the agent is not there, and refuses a card pointing elsewhere', async () => {
    const server = await start('1.0');
    const gone = await startA2aServer({ name: 'gone', description: '', skills: [], answer: () => '' });
    await gone.close();
    await expect(new A2aClient({ timeoutMs: 2000 }).send(gone.url, { body: 'x' })).rejects.toThrow(
      new RegExp(`GET ${gone.url}/\\.well-known/agent-card\\.json: connection refused`),
    );
    const viaLocalhost = server.url.replace('127.0.0.1', 'localhost');
    await expect(new A2aClient().send(viaLocalhost, { body: 'x' })).rejects.toThrow(
      /the card sends requests to http:\/\/127\.0\.0\.1:\d+, not to the agent's origin http:\/\/localhost/,
    );
    const allowed = new A2aClient({ allowOrigins: [server.url] });
    expect((await allowed.send(viaLocalhost, { body: 'x' })).result).toBe('echo: x');
  });

  it('caps what it reads of a reply', async () => {
    const server = await startA2aServer({
      name: 'big',
      description: 'Answers at length.',
      skills: [],
      answer: () => 'x'.repeat(100_000),
    });
    servers.push(server);
    await expect(new A2aClient({ maxReplyBytes: 10_000 }).send(server.url, { body: 'hi' })).rejects.toThrow(
      /larger than 10000 bytes/,
    );
  });
});
