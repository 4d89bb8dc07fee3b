// What tracing costs: `agora serve` as users start it (the CLI, defaults, request log to a file), untraced, and traced
// with every request sampled (OTLP/HTTP to a local sink that takes and drops what it is sent), loaded in alternating
// rounds in one run. Reports each one's requests per second, server CPU per request, and the traced/untraced ratio.
// Usage: npm run bench:tracing [-- --seconds 6 --rounds 4]
import { createServer } from 'node:http';
import { mkdtempSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { hashText } from '../src/protocol/document.js';
import { alternating, formatNumber, pairedRatio, table, type AlternatingResult } from './_harness.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { seconds: { type: 'string' }, rounds: { type: 'string' } } });
const seconds = Number(values.seconds ?? 6);
const rounds = Number(values.rounds ?? 4);

/** An OTLP/HTTP sink: answers every export at once and counts the bytes it was sent. */
async function startSink(): Promise<{ url: string; bytes: () => number; close(): void }> {
  let bytes = 0;
  const server = createServer((request, response) => {
    request.on('data', (chunk: Buffer) => (bytes += chunk.length));
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
    bytes: () => bytes,
    close: () => server.close(),
  };
}

/** `agora serve protocols-folder` from the build, its log to a file; resolves with its URL and pid once listening. */
function serve(env: NodeJS.ProcessEnv): Promise<{ url: string; pid: number; stop(): void }> {
  const log = openSync(join(mkdtempSync(join(tmpdir(), 'agora-bench-')), 'serve.log'), 'a');
  const child = spawn(process.execPath, [`${root}bin/agora.js`, 'serve', root, '--port', '0', '--host', '127.0.0.1'], {
    cwd: root,
    env: { ...process.env, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', ...env },
    stdio: ['ignore', 'pipe', log],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)|serving .* on (http:\/\/\S+)/.exec(output);
      const url = match?.[1] ?? match?.[2];
      if (url) resolve({ url, pid: child.pid!, stop: () => child.kill('SIGTERM') });
    });
    child.on('close', (code) => reject(new Error(`agora serve exited with ${code}: ${output}`)));
  });
}

const sink = await startSink();
const plain = await serve({});
const traced = await serve({ OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_SERVICE_NAME: 'bench' });
try {
  const hash = hashText(readFileSync(`${root}protocols/unit-conversion.md`));
  const body = JSON.stringify({ protocolHash: hash, body: { value: 10, from: 'km', to: 'mi' } });
  const results: AlternatingResult[] = await alternating(
    [
      { name: 'agora serve, untraced', url: plain.url, body, pid: plain.pid },
      { name: 'agora serve, traced (100% sampled, OTLP/HTTP protobuf)', url: traced.url, body, pid: traced.pid },
    ],
    rounds,
    seconds,
    (line) => console.error(line),
  );
  const [off, on] = results as [AlternatingResult, AlternatingResult];
  console.log(
    table(
      ['server', 'req/s (best round)', 'server CPU µs/request'],
      results.map((result) => [
        result.name,
        formatNumber(result.requestsPerSecond),
        result.cpuMicrosPerRequest === undefined ? '—' : formatNumber(result.cpuMicrosPerRequest, 1),
      ]),
    ),
  );
  const extra =
    on.cpuMicrosPerRequest !== undefined && off.cpuMicrosPerRequest !== undefined
      ? on.cpuMicrosPerRequest - off.cpuMicrosPerRequest
      : undefined;
  console.log(
    `\ntraced / untraced: ${pairedRatio(on, off).toFixed(2)} (median of paired rounds); ` +
      `tracing's server CPU per request: ${extra === undefined ? '—' : `${extra.toFixed(1)} µs`}; ` +
      `${formatNumber(sink.bytes() / 1024)} KiB of spans exported`,
  );
} finally {
  plain.stop();
  traced.stop();
  sink.close();
}
