// `agora send` to agents of the other protocols: named with --as, or found from what the agent serves; `agora hub
// register` of one that says nothing of itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type RunningHub } from '../../src/hub/server.js';
import { silentLogger } from '../../src/log.js';
import type { JsonValue } from '../../src/schemas.js';
import { startA2aServer, type A2aTestServer } from '../helpers/a2a-server.js';
import { runCli } from '../helpers/cli.js';
import { startRoarRouter, type RoarRouter } from '../helpers/roar-router.js';
import { startRoarServer, type RoarTestServer } from '../helpers/roar-server.js';

describe('agora send to ROAR and A2A agents', () => {
  let roar: RoarTestServer;
  let a2a: A2aTestServer;
  beforeAll(async () => {
    roar = await startRoarServer({
      name: 'reviewer',
      description: 'Reviews.',
      capabilities: ['review'],
      secret: 'shh',
      answer: (task): JsonValue | { pieces: string[] } =>
        task === 'stream' ? { pieces: ['x', 'y'] } : `reviewed: ${task}`,
    });
    a2a = await startA2aServer({
      name: 'echo',
      description: 'Echoes.',
      skills: [],
      answer: (input) => (input === 'stream' ? { pieces: ['one ', 'two'] } : `echo: ${input}`),
    });
  });
  afterAll(async () => {
    await roar.close();
    await a2a.close();
  });

  it(
    'sends to a ROAR agent with --as roar, signed with --roar-secret, and streams over its WebSocket',
    { timeout: 90_000 },
    async () => {
      const sent = await runCli(['send', roar.url, 'my diff', '--as', 'roar', '--roar-secret', 'shh']);
      expect(sent.stderr).toBe('');
      expect(sent.stdout).toBe('reviewed: my diff\n');
      expect(
        (
          await runCli(['send', roar.url, 'stream', '--as', 'roar', '--stream'], {
            env: { ...process.env, AGORA_ROAR_SECRET: 'shh' },
          })
        ).stdout,
      ).toBe('xy\n');
      const refused = await runCli(['send', roar.url, 'x', '--as', 'roar', '--roar-secret', 'wrong']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/POST http:\/\/127\.0\.0\.1:\d+\/roar\/message: HTTP 401 \(signature_invalid\)/);
    },
  );

  it(
    'finds an A2A agent from its card when it does not answer Agora, and streams its answer',
    { timeout: 90_000 },
    async () => {
      expect((await runCli(['send', a2a.url, 'hello'])).stdout).toBe('echo: hello\n');
      const json = await runCli(['send', a2a.url, 'hello', '--as', 'a2a', '--json']);
      expect(JSON.parse(json.stdout)).toMatchObject({ body: 'echo: hello', conversationId: expect.any(String) });
      expect((await runCli(['send', a2a.url, 'stream', '--stream'])).stdout).toBe('one two\n');
      expect((await runCli(['send', a2a.url, 'x', '--as', 'mcp'])).stderr).toMatch(
        /--as takes one of agora, roar, oap, a2a/,
      );
    },
  );
});

describe("agora send and agora hub register with a ROAR agent without a card (ROAR's own router)", () => {
  let open: RoarRouter;
  let guarded: RoarRouter;
  let hub: RunningHub;
  beforeAll(async () => {
    const answer = (payload: Record<string, unknown>) => ({ status: 'ok', review: `LGTM: ${String(payload.task)}` });
    open = await startRoarRouter({ name: 'open', answer });
    // A handler that signs its replies with the secret, as ROAR's security model has it.
    guarded = await startRoarRouter({ name: 'guarded', secret: 'shh', signReplies: true, answer });
    hub = await startHub({ port: 0, allowPrivateAgents: true, tickMs: 0, logger: silentLogger });
  });
  afterAll(async () => {
    await open.close();
    await guarded.close();
    await hub.close();
  });

  it(
    'sends with --as roar, signed with --roar-secret when given, and finds it from /roar/health without --as',
    { timeout: 90_000 },
    async () => {
      expect(JSON.parse((await runCli(['send', open.url, 'my diff', '--as', 'roar'])).stdout)).toEqual({
        status: 'ok',
        review: 'LGTM: my diff',
      });
      expect(
        await runCli(['send', guarded.url, 'signed diff', '--as', 'roar', '--roar-secret', 'shh', '--json']),
      ).toMatchObject({ code: 0, stdout: expect.stringContaining('"review": "LGTM: signed diff"') });
      expect(guarded.received[0]).toMatchObject({ signed: true, payload: { task: 'signed diff' } });
      const found = await runCli(['send', guarded.url, 'found', '--stream'], {
        env: { ...process.env, AGORA_ROAR_SECRET: 'shh' },
      });
      expect(found).toMatchObject({ code: 0, stderr: '', stdout: expect.stringContaining('"review": "LGTM: found"') });
      const refused = await runCli(['send', guarded.url, 'x', '--as', 'roar']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/POST http:\/\/127\.0\.0\.1:\d+\/roar\/message: HTTP 403 \(signature_invalid\)/);
    },
  );

  it(
    'registers it with the name, description and capabilities given on the command line',
    { timeout: 60_000 },
    async () => {
      const registered = await runCli([
        'hub',
        'register',
        open.url,
        '--hub',
        hub.url,
        '--name',
        'py-reviewer',
        '--description',
        'Reviews diffs',
        '--capability',
        'code-review,python',
        '--capability',
        'security',
      ]);
      expect(registered.stderr).toBe('');
      expect(registered.stdout).toMatch(
        /^registered py-reviewer \([0-9a-f]{16}\) at http:\/\/127\.0\.0\.1:\d+: 0 protocols; roar, capabilities: code-review, python, security\n$/,
      );
      expect((await hub.hub.directory.resolve('py-reviewer'))?.description).toBe('Reviews diffs');
    },
  );
});
