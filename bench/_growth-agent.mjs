// The agent of the growth bench, in its own process on the compiled build (`npm run bench` builds first), as
// `agora serve` runs it: the offline LLM (every document listed), no faces, no dashboard. It listens while its
// protocols load, as `agora serve` does: prints `PORT <n>`, then `LOADED` once every document is read. On SIGUSR2 it
// rereads the whole protocols/ folder (what a lost watch event causes) and prints `SCANNED` when done.
// Usage: node bench/_growth-agent.mjs <agent dir>
import { startServer } from '../dist/agent.js';
import { OfflineModel } from '../dist/llm/offline.js';
import { silentLogger } from '../dist/log.js';
import { Receiver } from '../dist/receiver.js';

const receiver = await Receiver.start({
  dir: process.argv[2],
  llm: new OfflineModel(),
  logger: silentLogger,
  waitForProtocols: false,
});
const server = await startServer(receiver, {
  port: 0,
  host: '127.0.0.1',
  faces: false,
  dashboard: false,
  logger: silentLogger,
});
process.on('SIGUSR2', () => void receiver.registry.scan().then(() => process.stdout.write('SCANNED\n')));
process.on(
  'SIGTERM',
  () =>
    void server
      .close()
      .then(() => receiver.close())
      .finally(() => process.exit(0)),
);
process.stdout.write(`PORT ${server.port}\n`);
void receiver.loaded().then(() => process.stdout.write('LOADED\n'));
