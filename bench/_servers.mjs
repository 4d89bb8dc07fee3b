// A benchmark server in its own process, so the load generator does not share its event loop. Plain JavaScript
// on the compiled build (`npm run bench` builds first): what `agora serve` runs, without a TypeScript loader.
// Usage: node bench/_servers.mjs <kind> [agent dir]; prints `PORT <n>` when listening.
import { createServer } from 'node:http';
import { join } from 'node:path';
import express from 'express';
import { createAgentDashboard } from '../dist/dashboard/agent-dashboard.js';
import { agoraRouter } from '../dist/express.js';
import { startServer } from '../dist/agent.js';
import { silentLogger } from '../dist/log.js';
import { Receiver } from '../dist/receiver.js';

const [kind, dir] = process.argv.slice(2);

async function main() {
  if (kind === 'node-echo') {
    const server = createServer((request, response) => {
      const chunks = [];
      request.on('data', (chunk) => chunks.push(chunk));
      request.on('end', () => {
        const body = JSON.stringify(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        response.end(body);
      });
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    return server.address().port;
  }
  if (kind === 'node-echo-batched') {
    // The same echo, its responses written together after each turn of the event loop, as `agora serve` writes
    // its own (src/edge/_write-batch.ts): shows how much of a ratio to the plain echo that technique makes.
    let queue = [];
    const flush = () => {
      const batch = queue;
      queue = [];
      for (const [response, body] of batch) {
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        response.end(body);
      }
    };
    const server = createServer((request, response) => {
      const chunks = [];
      request.on('data', (chunk) => chunks.push(chunk));
      request.on('end', () => {
        if (queue.length === 0) setImmediate(flush);
        queue.push([response, JSON.stringify(JSON.parse(Buffer.concat(chunks).toString('utf8')))]);
      });
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    return server.address().port;
  }
  if (kind === 'express-echo') {
    const app = express();
    app.use(express.json());
    app.post('/', (request, response) => {
      response.json(request.body);
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    return server.address().port;
  }
  if (kind === 'agora-generated') {
    // An agent whose routine for the protocol is a generated one, approved (bench/sandbox.ts wrote the folder):
    // served from the QuickJS sandbox through the RoutineGenerator, as `agora serve` does. No LLM is ever called.
    const [{ FileMemory }, { RoutineGenerator }] = await Promise.all([
      import('../dist/memory/file.js'),
      import('../dist/generation/generate.js'),
    ]);
    const memory = new FileMemory(join(dir, '.agora'));
    const llm = { model: 'none', complete: async () => Promise.reject(new Error('no LLM in this benchmark')) };
    let generated;
    const generator = new RoutineGenerator({ dir, memory, llm, tools: () => generated.tools, logger: silentLogger });
    generated = await Receiver.start({
      dir,
      memory,
      logger: silentLogger,
      watch: false,
      extensions: generator.extensions(),
    });
    return (await startServer(generated, { port: 0, host: '127.0.0.1', logger: silentLogger })).port;
  }
  const receiver = await Receiver.start({ dir, logger: silentLogger, watch: false });
  if (kind === 'agora') {
    return (await startServer(receiver, { port: 0, host: '127.0.0.1', logger: silentLogger })).port;
  }
  if (kind === 'agora-dashboard') {
    // As `agora serve` runs it: the dashboard mounted and recording every query.
    return (
      await startServer(receiver, {
        port: 0,
        host: '127.0.0.1',
        logger: silentLogger,
        routes: createAgentDashboard(receiver, { logger: silentLogger }),
      })
    ).port;
  }
  if (kind === 'agora-faces') {
    // The faces as `agora serve` mounts them, ROAR HMAC-signed; the load repeats one signed message, so ids are
    // accepted again and every request does all the work but the replay refusal.
    const replay = { firstSeen: async () => true, close: async () => {} };
    const faces = { roarSecret: process.env.BENCH_ROAR_SECRET ?? 'bench-secret', replay };
    return (await startServer(receiver, { port: 0, host: '127.0.0.1', logger: silentLogger, faces })).port;
  }
  if (kind === 'agora-faces-open') {
    // The faces as `agora serve` mounts them by default: no ROAR secret, so ROAR messages come unsigned; the replay
    // guard accepts the repeated message id as in `agora-faces`.
    const replay = { firstSeen: async () => true, close: async () => {} };
    return (await startServer(receiver, { port: 0, host: '127.0.0.1', logger: silentLogger, faces: { replay } })).port;
  }
  if (kind === 'agora-express') {
    const app = express();
    app.use('/', agoraRouter(receiver, { logger: silentLogger }));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    return server.address().port;
  }
  throw new Error(`unknown server kind ${kind}`);
}

main().then(
  (port) => console.log(`PORT ${port}`),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);

// Exit normally on a signal, so `--cpu-prof` writes its profile when profiling a benchmark server.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
