// A benchmark server for the faces: the Agora core and the faces on one node:http server, as `agora serve`
// will mount them. Usage: tsx bench/_faces-server.ts <agent dir> <roar secret>; prints `PORT <n>`.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createFaces } from '../src/faces/index.js';
import { faceRequestOf, writeFaceResponse } from '../src/faces/node.js';
import { createHandler } from '../src/http/handler.js';
import { silentLogger } from '../src/log.js';
import { InMemoryMemory } from '../src/memory/file.js';
import { Receiver } from '../src/receiver.js';

const [dir, secret] = process.argv.slice(2);
const receiver = await Receiver.start({ dir: dir!, logger: silentLogger, watch: false, memory: new InMemoryMemory() });
const core = createHandler(receiver, { logger: silentLogger });
// wrk repeats one signed message: ids are accepted again so every request does the whole work but the replay refusal.
const faces = createFaces(receiver, { name: receiver.name, memory: receiver.memory, roarSecret: secret!, logger: silentLogger, replay: { firstSeen: async () => true, close: async () => {} } });
const server = createServer((incoming, response) => {
  const request = faceRequestOf(incoming, 1024 * 1024);
  void faces.handle(request).then(async (result) => {
    if (result) return writeFaceResponse(response, result);
    const answer = await core(request);
    response.writeHead(answer.status, answer.headers).end(answer.body);
  });
});
server.listen(0, '127.0.0.1', () => console.log(`PORT ${(server.address() as AddressInfo).port}`));
process.on('SIGTERM', () => process.exit(0));
