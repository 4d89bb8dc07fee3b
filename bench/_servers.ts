// A benchmark server in its own process, so the load generator does not share its event loop.
// Usage: tsx bench/_servers.ts <kind> [agent dir]; prints `PORT <n>` when listening.
import { createServer } from 'node:http';
import express from 'express';
import { agoraRouter } from '../src/express.js';
import { startServer } from '../src/http.js';
import { silentLogger } from '../src/log.js';
import { Receiver } from '../src/receiver.js';

const [kind, dir] = process.argv.slice(2);

async function main(): Promise<number> {
  if (kind === 'node-echo') {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = JSON.stringify(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        response.end(body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as { port: number }).port;
  }
  if (kind === 'express-echo') {
    const app = express();
    app.use(express.json());
    app.post('/', (request, response) => {
      response.json(request.body);
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    return (server.address() as { port: number }).port;
  }
  const receiver = await Receiver.start({ dir: dir!, logger: silentLogger, watch: false });
  if (kind === 'agora') {
    return (await startServer(receiver, { port: 0, host: '127.0.0.1', logger: silentLogger })).port;
  }
  if (kind === 'agora-express') {
    const app = express();
    app.use('/', agoraRouter(receiver, { logger: silentLogger }));
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    return (server.address() as { port: number }).port;
  }
  throw new Error(`unknown server kind ${kind}`);
}

main().then(
  (port) => console.log(`PORT ${port}`),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
