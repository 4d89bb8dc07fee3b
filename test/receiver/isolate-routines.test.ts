import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/agent.js';
import { memoryLogger, silentLogger } from '../../src/log.js';
import { hashText } from '../../src/protocol/document.js';
import { Receiver } from '../../src/receiver.js';

// Issue 11, finding 5: a synchronous loop in a hand-written routine froze the whole agent.
const PROTOCOL = [
  '---',
  'name: Spin',
  'description: Spins when asked.',
  'multiround: false',
  '---',
  '',
  'The sender sends JSON {"spin": boolean}; the receiver replies JSON {"ok": true, "stack": string}.',
  '',
].join('\n');
const ROUTINE = [
  "import { defineRoutine } from 'agora-agents';",
  'export default defineRoutine({',
  '  handle(body: { spin?: boolean; stream?: boolean }) {',
  '    if (body.spin) for (;;);',
  "    return { ok: true, stack: new Error('where').stack ?? '' };",
  '  },',
  '});',
  '',
].join('\n');
const STREAMING = [
  "import { defineRoutine } from 'agora-agents';",
  'export default defineRoutine({',
  '  async *handle(body: { spin?: boolean }) {',
  "    yield 'first';",
  '    if (body.spin) for (;;);',
  '    return { ok: true };',
  '  },',
  '});',
  '',
].join('\n');

let dir: string;
let receiver: Receiver | undefined;
let server: RunningServer | undefined;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agora-isolate-'));
  await mkdir(join(dir, 'protocols'));
  await mkdir(join(dir, 'routines'));
  await writeFile(join(dir, 'protocols', 'spin.md'), PROTOCOL);
  await writeFile(join(dir, 'routines', 'spin.ts'), ROUTINE);
  await writeFile(join(dir, 'protocols', 'spin-stream.md'), PROTOCOL.replace('name: Spin', 'name: Spin stream'));
  await writeFile(join(dir, 'routines', 'spin-stream.ts'), STREAMING);
});

afterEach(async () => {
  await server?.close();
  await receiver?.close();
  server = undefined;
  receiver = undefined;
  await rm(dir, { recursive: true, force: true });
});

const hash = hashText(PROTOCOL);
const post = (url: string, body: unknown) =>
  fetch(`${url}/`, { method: 'POST', body: JSON.stringify({ protocolHash: hash, body }) });

describe('--isolate-routines', () => {
  it('fails a routine looping forever after 500 ms (not its 10 s time limit) with Routine failed, and /health answers after it', async () => {
    const logger = memoryLogger();
    receiver = await Receiver.start({ dir, llm: null, watch: false, logger, isolateRoutines: true });
    server = await startServer(receiver, { port: 0, logger: silentLogger });
    const spinning = post(server.url, { spin: true });
    // The health check is queued behind the loop: it answers once the loop is interrupted, not never.
    const health = fetch(`${server.url}/health`);
    const reply = await spinning;
    expect(await reply.json()).toEqual({ status: 'failure', error: 'Routine failed' });
    expect((await health).status).toBe(200);
    expect(logger.lines.join('\n')).toMatch(/ran synchronously for longer than 500 ms/);
    // The agent serves on, the routine included.
    expect(await (await post(server.url, {})).json()).toMatchObject({ status: 'success', body: { ok: true } });
  });

  it('bounds each step of a streaming routine the same way', async () => {
    receiver = await Receiver.start({ dir, llm: null, watch: false, logger: silentLogger, isolateRoutines: true });
    const streamHash = hashText(PROTOCOL.replace('name: Spin', 'name: Spin stream'));
    await expect(receiver.query({ protocolHash: streamHash, body: { spin: true } })).rejects.toThrow('Routine failed');
    expect(await receiver.query({ protocolHash: streamHash, body: {} })).toMatchObject({
      status: 'success',
      body: { ok: true },
    });
  });

  it('runs the routine through the vm entry point only when asked: the default keeps the plain call', async () => {
    receiver = await Receiver.start({ dir, llm: null, watch: false, logger: silentLogger, isolateRoutines: true });
    expect(((await receiver.query({ protocolHash: hash, body: {} })).body as { stack: string }).stack).toContain(
      'agora-routine-isolate.js',
    );
    await receiver.close();
    receiver = await Receiver.start({ dir, llm: null, watch: false, logger: silentLogger });
    expect(((await receiver.query({ protocolHash: hash, body: {} })).body as { stack: string }).stack).not.toContain(
      'agora-routine-isolate.js',
    );
  });
});

describe('agora serve --isolate-routines', () => {
  it('takes the flag or AGORA_ISOLATE_ROUTINES, off by default', async () => {
    const { parseCommandArgs } = await import('../../src/cli/_command.js');
    const { command } = await import('../../src/cli/serve.js');
    expect(parseCommandArgs(command, ['--isolate-routines'], {}).values['isolate-routines']).toBe(true);
    expect(parseCommandArgs(command, [], { AGORA_ISOLATE_ROUTINES: '1' }).values['isolate-routines']).toBe(true);
    expect(parseCommandArgs(command, [], {}).values['isolate-routines']).toBe(false);
  });
});
