import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent.js';
import { startServer } from '../../src/agent.js';
import { AnthropicModel } from '../../src/llm/anthropic/model.js';
import { silentLogger } from '../../src/log.js';
import { hashText } from '../../src/protocol/document.js';
import { Receiver } from '../../src/receiver.js';
import { FakeAnthropic, type FakeRequest } from '../../src/testing/fake-anthropic.js';
import { FakeOpenAI } from '../../src/testing/fake-openai.js';
import { startPythonPeer, type PythonPeer } from '../helpers/python-peer.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DISTANCE =
  '---\nname: Distance conversion\ndescription: Convert a distance in miles to kilometres.\nmultiround: false\n---\n\nThe sender sends JSON {"miles": number}.\nThe receiver replies JSON {"km": number}.\n';
const km = (miles: number) => Math.round(miles * 1609.344) / 1000;

type Run = { code: number | null; stdout: string; stderr: string };

// The CLI as users run it, from source through the repo's tsx.
function agora(args: string[], options: { input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      cwd: ROOT,
      env: options.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

const cleanup: (() => Promise<void>)[] = [];
let dir: string;
let url: string;
let receiver: Receiver;
let bareUrl: string;
let python: PythonPeer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agora-cli-'));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, 'protocols'));
  await mkdir(join(dir, 'routines'));
  await writeFile(join(dir, 'protocols', 'distance.md'), DISTANCE);
  await writeFile(
    join(dir, 'routines', 'distance.ts'),
    'export default (body: { miles: number }) => ({ km: Math.round(body.miles * 1609.344) / 1000 });\n',
  );
  const fake = await FakeAnthropic.start({
    fallback: (request: FakeRequest) =>
      request.body.messages.length > 1
        ? `You said: ${request.lastUserText}`
        : `Hello, you said: ${request.lastUserText}`,
  });
  cleanup.push(() => fake.close());
  receiver = await Receiver.start({
    dir,
    watch: false,
    logger: silentLogger,
    llm: new AnthropicModel({ baseURL: fake.url, apiKey: 'test', maxRetries: 0 }),
  });
  const server = await startServer(receiver, { port: 0, host: '127.0.0.1', logger: silentLogger });
  cleanup.push(async () => {
    await server.close();
    await receiver.close();
  });
  url = server.url;

  const bareDir = await mkdtemp(join(tmpdir(), 'agora-cli-bare-'));
  cleanup.push(() => rm(bareDir, { recursive: true, force: true }));
  const bare = await Receiver.start({ dir: bareDir, watch: false, logger: silentLogger, llm: null });
  const bareServer = await startServer(bare, { port: 0, host: '127.0.0.1', logger: silentLogger });
  cleanup.push(async () => {
    await bareServer.close();
    await bare.close();
  });
  bareUrl = bareServer.url;
  python = await startPythonPeer();
  cleanup.push(() => python.close());
});

afterAll(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
});

describe('agora send', () => {
  it('prints a string body raw', async () => {
    expect(await agora(['send', url, 'What is 5 miles in km?'])).toEqual({
      code: 0,
      stdout: 'Hello, you said: What is 5 miles in km?\n',
      stderr: '',
    });
  });

  it('prints a streamed reply as it comes with --stream', async () => {
    expect(await agora(['send', url, 'Stream this', '--stream'])).toEqual({
      code: 0,
      stdout: 'Hello, you said: Stream this\n',
      stderr: '',
    });
    const file = join(dir, 'protocols', 'distance.md');
    expect(await agora(['send', url, '{"miles": 5}', '--protocol', file, '--stream'])).toEqual({
      code: 0,
      stdout: '{\n  "km": 8.047\n}\n',
      stderr: '',
    });
  });

  it('sends JSON under a protocol file and prints the reply pretty, or whole with --json', async () => {
    const file = join(dir, 'protocols', 'distance.md');
    const [pretty, json] = await Promise.all([
      agora(['send', url, '{"miles": 5}', '--protocol', file]),
      agora(['send', url, '-', '--protocol', file, '--json'], { input: '{"miles": 10}\n' }),
    ]);
    expect(pretty).toEqual({ code: 0, stdout: '{\n  "km": 8.047\n}\n', stderr: '' });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ body: { km: km(10) } });
  });

  it("prints the peer's error on one stderr line (and what to do next, when known) and exits 1", async () => {
    const closed = createServer();
    await new Promise<void>((listening) => closed.listen(0, '127.0.0.1', listening));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((done) => closed.close(() => done()));
    const [natural, unreachable, usage] = await Promise.all([
      agora(['send', bareUrl, 'hello']),
      agora(['send', `http://127.0.0.1:${port}`, 'hi']),
      agora(['send', url]),
    ]);
    expect(natural).toEqual({
      code: 1,
      stdout: '',
      stderr: `agora send: POST ${bareUrl}/: failure: This agent only accepts queries under the protocols listed at /wellknown\n`,
    });
    expect(unreachable).toEqual({
      code: 1,
      stdout: '',
      stderr:
        `agora send: POST http://127.0.0.1:${port}/: connection refused\n` +
        `  is an agent running at http://127.0.0.1:${port}? Start one with \`agora serve\`\n`,
    });
    expect(usage.code).toBe(2);
  });

  it('holds a conversation with --multiround, one turn per stdin line, and closes it', async () => {
    const run = await agora(['send', url, '--multiround'], { input: 'first\nsecond\n' });
    expect(run).toEqual({ code: 0, stdout: 'Hello, you said: first\nYou said: second\n', stderr: '' });
    expect(await receiver.store.count()).toBe(0);
  });
});

describe('agora send to a Python SDK 0.2.0 peer', () => {
  it('sends a protocol query as the SDK reads it, and surfaces its error texts with exit 1', async () => {
    const peer = await startPythonPeer({
      answer: ({ protocol, body }) =>
        protocol === null
          ? String(body)
          : JSON.stringify({ km: km((JSON.parse(String(body)) as { miles: number }).miles) }),
      unsuitable: (text) => text.includes('Horoscope'),
    });
    cleanup.push(() => peer.close());
    const file = join(dir, 'protocols', 'distance.md');
    const horoscope = join(dir, 'horoscope.md');
    await writeFile(
      horoscope,
      '---\nname: Horoscope\ndescription: Tomorrow for a sign.\nmultiround: false\n---\n\nThe sender sends JSON {"sign": string}.\n',
    );
    const [query, gone, unsuitable] = await Promise.all([
      agora(['send', peer.url, '{"miles": 5}', '--protocol', file]),
      agora(['send', `${peer.url}/conversations/nope`, 'hello']),
      agora(['send', peer.url, '{"sign": "Leo"}', '--protocol', horoscope]),
    ]);
    // Base64 hash, a data: source, the body as JSON text; the JSON text reply read back and printed as JSON.
    expect(query).toEqual({ code: 0, stdout: '{\n  "km": 8.047\n}\n', stderr: '' });
    const post = peer.requests.find((request) => request.method === 'POST' && request.json?.body === '{"miles":5}');
    expect(post?.json).toMatchObject({
      protocolHash: hashText(DISTANCE, 'base64'),
      protocolSources: [expect.stringMatching(/^data:text\/plain;charset=utf-8/)],
    });
    // Posted to the URL given, not `…/nope/` (which Flask would answer with an HTML 404).
    expect(gone).toEqual({
      code: 1,
      stdout: '',
      stderr: `agora send: POST ${peer.url}/conversations/nope: failure: Conversation not found.\n`,
    });
    expect(unsuitable.code).toBe(1);
    expect(unsuitable.stderr).toMatch(/^agora send: POST .*: failure: \S+ is not suitable for execution\n$/);
  });
});

describe('agora wellknown', () => {
  it("lists the peer's protocols with their names", async () => {
    const hash = hashText(DISTANCE);
    const [plain, json] = await Promise.all([agora(['wellknown', url]), agora(['wellknown', url, '--json'])]);
    expect(plain).toEqual({ code: 0, stdout: `${hash}  Distance conversion\n`, stderr: '' });
    expect(JSON.parse(json.stdout)).toEqual([
      {
        hash,
        name: 'Distance conversion',
        description: 'Convert a distance in miles to kilometres.',
        multiround: false,
        sources: [`${url}/protocols/${hash}`],
      },
    ]);
  });

  it('says so on one line when the peer has no /wellknown', async () => {
    const run = await agora(['wellknown', python.url]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `agora wellknown: GET ${python.url}/wellknown: HTTP 404: the peer lists no protocols (a Python SDK peer?)\n`,
    );
  });
});

describe('agora negotiate', () => {
  let peer: RunningAgent;
  let senderFake: FakeAnthropic;

  beforeAll(async () => {
    const peerFake = await FakeAnthropic.start({
      fallback: (request: FakeRequest) =>
        request.system.includes('negotiates') ? 'I accept this protocol.' : { status: 500 },
    });
    senderFake = await FakeAnthropic.start({
      fallback: (request: FakeRequest) =>
        request.body.messages.length === 1
          ? `Proposal:\n${DISTANCE}`
          : `<FINALPROTOCOL>\n${DISTANCE}\n</FINALPROTOCOL>`,
    });
    cleanup.push(
      () => peerFake.close(),
      () => senderFake.close(),
    );
    const peerDir = await mkdtemp(join(tmpdir(), 'agora-cli-peer-'));
    cleanup.push(() => rm(peerDir, { recursive: true, force: true }));
    peer = await startAgent({
      dir: peerDir,
      port: 0,
      host: '127.0.0.1',
      llm: new AnthropicModel({ baseURL: peerFake.url, apiKey: 'test', maxRetries: 0 }),
      logger: silentLogger,
      watch: false,
    });
    cleanup.push(() => peer.close());
  });

  it('shows each round, writes the protocol and prints its path and hash', async () => {
    const agentDir = await mkdtemp(join(tmpdir(), 'agora-cli-sender-'));
    cleanup.push(() => rm(agentDir, { recursive: true, force: true }));
    const env = {
      ...process.env,
      ANTHROPIC_API_KEY: 'test',
      ANTHROPIC_BASE_URL: senderFake.url,
      AGORA_MODEL: 'claude-test',
    };
    const run = await agora(['negotiate', peer.url, '--task', 'Convert miles to kilometres', '--dir', agentDir], {
      env,
    });
    const path = join(agentDir, 'protocols', 'distance-conversion.md');
    expect(run.stdout).toBe(`${path}\n${hashText(DISTANCE)}\n`);
    expect(run.stderr).toContain('round 1/10 → proposed "Distance conversion"\n  ← peer: I accept this protocol.\n');
    expect(run.code).toBe(0);
    expect(await readFile(path, 'utf8')).toBe(DISTANCE);
  });

  it('negotiates on an OpenAI-compatible API chosen by --llm and --llm-base-url', async () => {
    const openaiFake = await FakeOpenAI.start({
      fallback: (request: FakeRequest) =>
        request.turns === 1 ? `Proposal:\n${DISTANCE}` : `<FINALPROTOCOL>\n${DISTANCE}\n</FINALPROTOCOL>`,
    });
    cleanup.push(() => openaiFake.close());
    const agentDir = await mkdtemp(join(tmpdir(), 'agora-cli-sender-'));
    cleanup.push(() => rm(agentDir, { recursive: true, force: true }));
    const env = {
      ...process.env,
      ANTHROPIC_API_KEY: '',
      ANTHROPIC_AUTH_TOKEN: '',
      OPENAI_API_KEY: '',
      AGORA_LLM: '',
      AGORA_MODEL: '',
    };
    const run = await agora(
      [
        'negotiate',
        peer.url,
        '--task',
        'Convert miles to kilometres',
        '--dir',
        agentDir,
        '--llm',
        'openai',
        '--llm-base-url',
        openaiFake.url,
        '--model',
        'llama3.2',
      ],
      { env },
    );
    expect(run.stdout).toBe(`${join(agentDir, 'protocols', 'distance-conversion.md')}\n${hashText(DISTANCE)}\n`);
    expect(run.code).toBe(0);
    expect(openaiFake.requests[0]!.body.model).toBe('llama3.2');
  });

  it('needs an LLM', async () => {
    const env = { ...process.env };
    for (const name of ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'OPENAI_API_KEY', 'OPENAI_BASE_URL', 'AGORA_LLM'])
      delete env[name];
    const run = await agora(['negotiate', peer.url, '--task', 'anything'], { env });
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'agora negotiate: no LLM: negotiating needs one (--llm, ANTHROPIC_API_KEY or OPENAI_API_KEY; --llm offline for a demo without a key)\n',
    });
  });
});
