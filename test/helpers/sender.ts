import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgoraError } from '../../src/errors.js';
import { startServer } from '../../src/agent.js';
import { AnthropicModel } from '../../src/llm/anthropic/model.js';
import { silentLogger } from '../../src/log.js';
import { hashText } from '../../src/protocol/document.js';
import { Receiver } from '../../src/receiver.js';
import { Sender, type SenderOptions } from '../../src/sender/sender.js';
import { startPythonPeer, type PythonPeer } from './python-peer.js';
import { FakeAnthropic, type FakeReply, type FakeRequest } from '../../src/testing/fake-anthropic.js';

/** The distance-conversion PD of the sender and negotiation tests, in the normalised layout a negotiation writes. */
export const DISTANCE = [
  '---',
  'name: Distance conversion',
  'description: Convert a distance in miles to kilometres.',
  'multiround: false',
  '---',
  '',
  'The sender sends JSON {"miles": number}.',
  'The receiver replies JSON {"km": number}, rounded to 3 decimals.',
  '',
].join('\n');

/** Miles to km, rounded to 3 decimals as {@link DISTANCE} prescribes. */
export const km = (miles: number) => Math.round(miles * 1609.344) / 1000;

/** Steps run last-first by `run` (in `afterAll`), each failure ignored; `tempDir` adds the removal of its folder. */
export function cleanupStack(): {
  push(...steps: (() => Promise<void>)[]): void;
  tempDir(prefix: string): Promise<string>;
  run(): Promise<void>;
} {
  const steps: (() => Promise<void>)[] = [];
  return {
    push: (...more) => void steps.push(...more),
    async tempDir(prefix) {
      const dir = await mkdtemp(join(tmpdir(), prefix));
      steps.push(() => rm(dir, { recursive: true, force: true }));
      return dir;
    },
    async run() {
      for (const step of steps.reverse()) await step().catch(() => undefined);
    },
  };
}

/** One request a sender made, its JSON body parsed. */
export type Call = { method: string; url: string; json?: any };

/** A fetch that records each request, then makes it. */
export function recordingFetch(): { calls: Call[]; fetch: typeof fetch } {
  const calls: Call[] = [];
  return {
    calls,
    fetch: async (input, init) => {
      calls.push({
        method: init?.method ?? 'GET',
        url: String(input),
        ...(typeof init?.body === 'string' ? { json: JSON.parse(init.body) } : {}),
      });
      return fetch(input, init);
    },
  };
}

/** The AgoraError a promise rejects with (fails the test when it resolves or throws something else). */
export async function failureOf(promise: Promise<unknown>): Promise<AgoraError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(AgoraError);
  return error as AgoraError;
}

/** Hex hash of {@link DISTANCE}. */
export const DISTANCE_HEX = hashText(DISTANCE);
/** The receiver's routine for {@link DISTANCE}. */
export const DISTANCE_ROUTINE =
  'export default (body: { miles: number }) => ({ km: Math.round(body.miles * 1609.344) / 1000 });\n';
/** A PD no receiver of these tests serves. */
export const NOT_SERVED =
  '---\nname: Horoscope\ndescription: Tomorrow for a sign.\nmultiround: false\n---\n\nThe sender sends JSON {"sign": string}.\n';
/** The receiver's answer to natural language when it has no LLM. */
export const NL_ONLY = 'This agent only accepts queries under the protocols listed at /wellknown';

const firstNumber = (text: string) => Number(/(\d+(?:\.\d+)?)/.exec(text)?.[1] ?? Number.NaN);

/** The peer's LLM: answers natural language about miles; later turns are echoed. */
export function receiverBrain(request: FakeRequest): FakeReply {
  if (request.body.messages.length > 1) return `You said: ${request.lastUserText}`;
  return `${firstNumber(request.lastUserText)} miles is ${km(firstNumber(request.lastUserText))} km.`;
}

/** Our sender's LLM, steered by which step's prompt it gets. */
export function senderBrain(request: FakeRequest): FakeReply {
  const input = /Input \(JSON\): (.*)/.exec(request.lastUserText)?.[1];
  if (request.system.includes('one message in natural language'))
    return `How many kilometres are ${JSON.parse(input!).miles} miles?`;
  if (request.system.includes('You decide whether a protocol document')) return 'It converts miles to kilometres.\nYES';
  if (request.system.includes('Write the body of the query'))
    return JSON.stringify({ miles: JSON.parse(input!).miles });
  if (request.system.includes('turn its reply into the JSON value')) {
    const reply = request.lastUserText.split('The other agent replied:\n')[1] ?? '';
    const value = /"km":\s*([\d.]+)/.exec(reply)?.[1] ?? /([\d.]+) km/.exec(reply)?.[1];
    return JSON.stringify({ km: Number(value) });
  }
  return { status: 500 };
}

/** A receiver of the sender tests, served over node:http on loopback. */
export type Started = { url: string; dir: string; receiver: Receiver; close(): Promise<void> };

/** What the sender test files share: a cleanup stack, receivers, raw servers and a quiet sender. */
export function senderFixture() {
  const cleanup = cleanupStack();

  async function startReceiver(options: { llm?: boolean; protocols?: boolean } = {}): Promise<Started> {
    const dir = await cleanup.tempDir('agora-receiver-');
    if (options.protocols !== false) {
      await mkdir(join(dir, 'protocols'));
      await mkdir(join(dir, 'routines'));
      await writeFile(join(dir, 'protocols', 'distance.md'), DISTANCE);
      await writeFile(join(dir, 'routines', 'distance.ts'), DISTANCE_ROUTINE);
    }
    let llm: AnthropicModel | undefined;
    if (options.llm !== false) {
      const fake = await FakeAnthropic.start({ fallback: receiverBrain });
      cleanup.push(() => fake.close());
      llm = new AnthropicModel({ baseURL: fake.url, apiKey: 'test', maxRetries: 0 });
    }
    const receiver = await Receiver.start({ dir, watch: false, logger: silentLogger, llm: llm ?? null });
    const server = await startServer(receiver, { port: 0, host: '127.0.0.1', logger: silentLogger });
    const close = async () => {
      await server.close();
      await receiver.close();
    };
    cleanup.push(close);
    return { url: server.url, dir, receiver, close };
  }

  async function rawServer(
    handler: (request: IncomingMessage, respond: (status: number, type: string, body: string) => void) => void,
  ): Promise<{ url: string; server: Server }> {
    const server = createServer((request, response) => {
      handler(request, (status, type, body) => response.writeHead(status, { 'content-type': type }).end(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanup.push(
      () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    );
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
  }

  function sender(options: SenderOptions = {}): Sender {
    return new Sender({ logger: silentLogger, ...options });
  }

  return { cleanup, startReceiver, rawServer, sender };
}

/**
 * The Python SDK emulation the sender tests talk to: answers distances under a PD as JSON text (the body it reads is
 * text too), echoes turns in natural language.
 */
export async function startDistancePythonPeer(cleanup: {
  push(...steps: (() => Promise<void>)[]): void;
}): Promise<PythonPeer> {
  const python = await startPythonPeer({
    answer: ({ protocol, body, turn }) =>
      protocol === null
        ? `turn ${turn}: ${String(body)}`
        : JSON.stringify({ km: km((JSON.parse(String(body)) as { miles: number }).miles) }),
    unsuitable: (text) => text.includes('Horoscope'),
  });
  cleanup.push(() => python.close());
  return python;
}

/** The peers a sender test file talks to, started once in `beforeAll`. */
export type SenderPeers = { agent: Started; routinesOnly: Started; python: PythonPeer };

/**
 * A sender test file's setup: our receiver with an LLM (`peers.agent`), optionally one without (`routinesOnly`) and
 * the Python SDK emulation (`python`, its request log cleared after each test); all closed in `afterAll`.
 */
export function senderSuite(options: { routinesOnly?: boolean; python?: boolean } = {}) {
  const fixture = senderFixture();
  const peers = {} as SenderPeers;
  beforeAll(async () => {
    const [agent, routinesOnly, python] = await Promise.all([
      fixture.startReceiver(),
      options.routinesOnly ? fixture.startReceiver({ llm: false }) : undefined,
      options.python ? startDistancePythonPeer(fixture.cleanup) : undefined,
    ]);
    Object.assign(peers, { agent, ...(routinesOnly ? { routinesOnly } : {}), ...(python ? { python } : {}) });
  });
  afterEach(() => {
    if (peers.python) peers.python.requests.length = 0;
  });
  afterAll(() => fixture.cleanup.run());
  return { ...fixture, peers };
}
