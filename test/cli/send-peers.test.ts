// `agora send` to agents of the other protocols: named with --as, or found from what the agent serves.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/schemas.js';
import { startA2aServer, type A2aTestServer } from '../helpers/a2a-server.js';
import { runCli } from '../helpers/cli.js';
import { startRoarServer, type RoarTestServer } from '../helpers/roar-server.js';

describe('agora send to ROAR and A2A agents', () => {
  let roar: RoarTestServer;
  let a2a: A2aTestServer;
  beforeAll(async () => {
    roar = await startRoarServer({ name: 'reviewer', description: 'Reviews.', capabilities: ['review'], secret: 'shh', answer: (task): JsonValue | { pieces: string[] } => (task === 'stream' ? { pieces: ['x', 'y'] } : `reviewed: ${task}`) });
    a2a = await startA2aServer({ name: 'echo', description: 'Echoes.', skills: [], answer: (input) => (input === 'stream' ? { pieces: ['one ', 'two'] } : `echo: ${input}`) });
  });
  afterAll(async () => {
    await roar.close();
    await a2a.close();
  });

  it('sends to a ROAR agent with --as roar, signed with --roar-secret, and streams over its WebSocket', { timeout: 90_000 }, async () => {
    const sent = await runCli(['send', roar.url, 'my diff', '--as', 'roar', '--roar-secret', 'shh']);
    expect(sent.stderr).toBe('');
    expect(sent.stdout).toBe('reviewed: my diff\n');
    expect((await runCli(['send', roar.url, 'stream', '--as', 'roar', '--stream'], { env: { ...process.env, AGORA_ROAR_SECRET: 'shh' } })).stdout).toBe('xy\n');
    const refused = await runCli(['send', roar.url, 'x', '--as', 'roar', '--roar-secret', 'wrong']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/POST http:\/\/127\.0\.0\.1:\d+\/roar\/message: HTTP 401 \(signature_invalid\)/);
  });

  it('finds an A2A agent from its card when it does not answer Agora, and streams its answer', { timeout: 90_000 }, async () => {
    expect((await runCli(['send', a2a.url, 'hello'])).stdout).toBe('echo: hello\n');
    const json = await runCli(['send', a2a.url, 'hello', '--as', 'a2a', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ body: 'echo: hello', conversationId: expect.any(String) });
    expect((await runCli(['send', a2a.url, 'stream', '--stream'])).stdout).toBe('one two\n');
    expect((await runCli(['send', a2a.url, 'x', '--as', 'mcp'])).stderr).toMatch(/--as takes one of agora, roar, a2a, oap/);
  });
});
