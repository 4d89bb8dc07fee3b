// Real agents on loopback for the hub's tests: a Receiver served by the Agora mount on the edge, each protocol answered
// by a function of the test (so a test can count calls, hold a hop, or answer with a handoff).
import { createServer, type Server } from 'node:http';
import { agoraMount } from '../../src/agora/handler.js';
import { compose } from '../../src/edge/mount.js';
import { listen, type RunningServer } from '../../src/edge/node.js';
import { silentLogger } from '../../src/log.js';
import { hashText } from '../../src/protocol/document.js';
import { Receiver } from '../../src/receiver.js';
import type { JsonValue } from '../../src/schemas.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';

/** Serves a receiver's Agora wire on a free loopback port. */
export function serveReceiver(receiver: Receiver): Promise<RunningServer> {
  return listen(compose([agoraMount(receiver, { logger: silentLogger })], { logger: silentLogger }), {
    port: 0,
    host: '127.0.0.1',
    logger: silentLogger,
  });
}

/** A protocol document with a name and description. */
export function document(name: string, description: string): string {
  return `---\nname: ${name}\ndescription: ${description}\nmultiround: false\n---\n\nThe sender sends JSON {"goal": string, "input": any}. The receiver replies with JSON.\n`;
}

export type LoopbackAgent = { url: string; calls: JsonValue[]; close(): Promise<void> };

/** An Agora agent whose every protocol is answered by `answer` (called with the body and the protocol's name). */
export async function startLoopbackAgent(
  protocols: Record<string, string>,
  answer: (body: JsonValue, protocol: string) => JsonValue | Promise<JsonValue>,
): Promise<LoopbackAgent> {
  const files: Record<string, string> = {};
  let index = 0;
  for (const [name, description] of Object.entries(protocols))
    files[`protocols/p${index++}.md`] = document(name, description);
  const folder = await makeAgentFolder(files);
  const calls: JsonValue[] = [];
  const receiver = await Receiver.start({
    dir: folder.dir,
    watch: false,
    logger: silentLogger,
    extensions: {
      routineFor: async (_hash, doc) => async (body) => {
        calls.push(body);
        return answer(body, doc.metadata.name);
      },
    },
  });
  const server = await serveReceiver(receiver);
  return {
    url: server.url,
    calls,
    async close() {
      await server.close();
      await receiver.close();
      await folder.cleanup();
    },
  };
}

/** A hand-made agent: `/wellknown` and `/protocols/:hash` from `state`, which the test changes (down, lying). */
export async function startFakeAgent(
  text: string,
): Promise<{ url: string; hash: string; state: { healthy: boolean; served: string }; close(): Promise<void> }> {
  const hash = hashText(text);
  const state = { healthy: true, served: text };
  const server: Server = createServer((request, response) => {
    if (!state.healthy) return void response.writeHead(500).end('{"status":"failure","error":"Internal error"}');
    if (request.url === '/wellknown')
      return void response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ [hash]: [`/protocols/${hash}`] }));
    if (request.url === `/protocols/${hash}`)
      return void response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(state.served);
    response.writeHead(404, { 'content-type': 'application/json' }).end('{"status":"failure","error":"Not found"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    hash,
    state,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
