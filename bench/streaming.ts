// Benchmark of issue 13: what streaming adds. (1) The time from the fake LLM's first token to our first `delta` at
// the client, against the same token read straight off the fake by the SDK (the baseline, same run); (2) streamed
// against non-streamed replies per second for a routine on one `agora serve` process.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../src/agent.js';
import { AnthropicModel } from '../src/llm/anthropic/model.js';
import { silentLogger } from '../src/log.js';
import { hashText } from '../src/protocol/document.js';
import { Receiver } from '../src/receiver.js';
import { FakeAnthropic } from '../src/testing/index.js';
import {
  alternating,
  formatNumber,
  load,
  median,
  pairedRatio,
  startProcess,
  table,
  type AlternatingResult,
} from './_harness.js';

// Rounds of the streamed / non-streamed comparison (see alternating).
const ROUNDS = 6;

const root = fileURLToPath(new URL('..', import.meta.url));

/** A fake whose every reply holds its first token until the bench releases it, noting when it did. */
function heldReplies(fake: FakeAnthropic, onRelease: (at: number) => void) {
  let release: (() => void) | undefined;
  let ready: (() => void) | undefined;
  fake.setFallback(() => ({
    text: 'first token, then the rest',
    stream: {
      chunks: ['first', ' token, then the rest'],
      delays: (index) => {
        if (index > 0) return 0;
        return new Promise<void>((resolve) => {
          release = () => {
            onRelease(performance.now());
            resolve();
          };
          ready?.();
        });
      },
    },
  }));
  // Resolves once the fake holds a first token, with the function that lets it go.
  return () => new Promise<() => void>((resolve) => (ready = () => resolve(release!)));
}

async function firstDeltaLatency(
  samples: number,
  log: (line: string) => void,
): Promise<{ direct: number; agent: number }> {
  const fake = await FakeAnthropic.start();
  const dir = await mkdtemp(join(tmpdir(), 'agora-bench-stream-'));
  const model = new AnthropicModel({ baseURL: fake.url, apiKey: 'bench', maxRetries: 0 });
  const receiver = await Receiver.start({ dir, watch: false, logger: silentLogger, llm: model });
  const server = await startServer(receiver, { port: 0, host: '127.0.0.1', logger: silentLogger });
  let releasedAt = 0;
  const held = heldReplies(fake, (at) => (releasedAt = at));
  const direct: number[] = [];
  const agent: number[] = [];
  try {
    for (let index = 0; index < samples + 20; index++) {
      // Straight off the fake: the SDK's first text event.
      const holding = held();
      let firstAt = 0;
      const call = model.stream(
        { system: 'bench', messages: [{ role: 'user', content: 'Hi' }] },
        () => (firstAt ||= performance.now()),
      );
      (await holding)();
      await call;
      if (index >= 20) direct.push(firstAt - releasedAt);

      // Through the agent: our first `delta` event read by an HTTP client.
      const holdingAgain = held();
      const response = await fetch(`${server.url}/`, {
        method: 'POST',
        headers: { accept: 'text/event-stream' },
        body: '{"body":"Hi"}',
      });
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      (await holdingAgain)();
      let text = '';
      let deltaAt = 0;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += value;
        if (!deltaAt && text.includes('event: delta')) deltaAt = performance.now();
      }
      if (index >= 20) agent.push(deltaAt - releasedAt);
    }
  } finally {
    await server.close();
    await receiver.close();
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  }
  log(`  first-delta latency: ${samples} samples each`);
  return { direct: median(direct), agent: median(agent) };
}

/** The streaming section: a Markdown table of both figures and their targets. */
export async function benchStreaming(duration: number, log: (line: string) => void): Promise<string> {
  const latency = await firstDeltaLatency(200, log);
  const hash = hashText(readFileSync(`${root}protocols/unit-conversion.md`));
  const body = JSON.stringify({ protocolHash: hash, body: { value: 10, from: 'km', to: 'mi' } });
  const server = await startProcess('bench/_servers.mjs', ['agora', root]);
  const headers = { accept: 'text/event-stream' };
  let plain: AlternatingResult;
  let streamed: AlternatingResult;
  try {
    await load('warm-up', { url: server.url, body, duration: 1 });
    await load('warm-up', { url: server.url, body, duration: 1, headers });
    // In alternating rounds on the one server, as the other sections (the host's speed swings within seconds).
    const pid = server.child.pid;
    [plain, streamed] = (await alternating(
      [
        { name: 'routine, non-streamed', url: server.url, body, pid },
        { name: 'routine, streamed (SSE)', url: server.url, body, headers, pid },
      ],
      ROUNDS,
      Math.max(1, Math.ceil(duration / 3)),
      log,
    )) as [AlternatingResult, AlternatingResult];
  } finally {
    await server.stop();
  }
  const ratio = pairedRatio(streamed, plain);
  const cpu =
    plain.cpuMicrosPerRequest && streamed.cpuMicrosPerRequest
      ? plain.cpuMicrosPerRequest / streamed.cpuMicrosPerRequest
      : NaN;
  const added = latency.agent - latency.direct;
  return [
    table(
      ['measure', 'value'],
      [
        ['first token → SDK text event, straight off the fake (baseline), median ms', formatNumber(latency.direct, 3)],
        ['first token → our first `delta` at an HTTP client, median ms', formatNumber(latency.agent, 3)],
        [`${plain.name}, req/s (best of ${ROUNDS} alternating rounds)`, formatNumber(plain.requestsPerSecond)],
        [`${streamed.name}, req/s (best of ${ROUNDS} alternating rounds)`, formatNumber(streamed.requestsPerSecond)],
      ],
    ),
    '',
    table(
      ['ratio', 'value', 'target'],
      [
        ['time added to the first token by streaming through the agent, median ms', formatNumber(added, 3), '< 2'],
        ['streamed / non-streamed replies per second (routine), median of rounds', formatNumber(ratio, 2), '≥ 0.70'],
        ['the same, best / best', formatNumber(streamed.requestsPerSecond / plain.requestsPerSecond, 2), '—'],
        ['the same, by server CPU time per request', formatNumber(cpu, 2), '—'],
      ],
    ),
  ].join('\n');
}
