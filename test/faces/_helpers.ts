import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgoraError } from '../../src/errors.js';
import { createFaces, type Faces, type FacesOptions } from '../../src/faces/index.js';
import { faceRequestOf, writeFaceResponse } from '../../src/faces/node.js';
import { InMemoryMemory } from '../../src/memory/file.js';
import type { ReceiverApi } from '../../src/receiver.js';
import type { FollowUpRequest, QueryRequest, SuccessResponse } from '../../src/schemas.js';

export const PROTOCOL_HASH = 'a'.repeat(40);
export const PROTOCOL_TEXT = '---\nname: Unit conversion\ndescription: Converts a value between units.\nmultiround: false\n---\nSend {"value": number, "from": string, "to": string}.\n';

/** A receiver double: routines answer the one protocol, natural language echoes with the turn number. */
export function fakeReceiver(): ReceiverApi & { queries: QueryRequest[]; followUps: [string, FollowUpRequest][] } {
  let next = 0;
  const turns = new Map<string, number>();
  const queries: QueryRequest[] = [];
  const followUps: [string, FollowUpRequest][] = [];
  return {
    queries,
    followUps,
    async query(request) {
      queries.push(request);
      if (request.protocolHash === 'bad') throw new AgoraError('UNSUPPORTED_PROTOCOL');
      if (request.protocolHash === 'crash') throw new Error('secret internals');
      const body = request.protocolHash ? { converted: true, input: request.body } : `turn 1: ${String(request.body)}`;
      if (!request.multiround) return { status: 'success', body };
      const id = `conv${++next}`;
      turns.set(id, 1);
      return { status: 'success', body, conversationId: id, conversationExpires: Math.floor(Date.now() / 1000) + 300 };
    },
    async followUp(id, request) {
      followUps.push([id, request]);
      const turn = turns.get(id);
      if (turn === undefined) throw new AgoraError('CONVERSATION_NOT_FOUND');
      turns.set(id, turn + 1);
      return { status: 'success', body: `turn ${turn + 1}: ${String(request.body)}`, conversationId: id, conversationExpires: Math.floor(Date.now() / 1000) + 300 } satisfies SuccessResponse;
    },
    async end() {},
    async wellknown() {
      return { [PROTOCOL_HASH]: [`/protocols/${PROTOCOL_HASH}`] };
    },
    async document(hash) {
      return hash === PROTOCOL_HASH ? PROTOCOL_TEXT : undefined;
    },
    async metrics() {
      return '';
    },
  };
}

/** Faces over the fake receiver, with a quiet logger. */
export function makeFaces(options: Partial<FacesOptions> = {}, receiver: ReceiverApi = fakeReceiver()): Faces {
  return createFaces(receiver, { name: 'Test agent', description: 'Converts units.', memory: new InMemoryMemory(), logger: { info() {}, warn() {}, error() {} }, ...options });
}

/** The faces mounted on a throwaway node:http server on port 0 (WebSocket included). */
export async function serveFaces(faces: Faces): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const server = createServer((incoming, response) => {
    void faces.handle(faceRequestOf(incoming, 1024 * 1024)).then(
      async (result) => {
        if (result) await writeFaceResponse(response, result);
        else response.writeHead(404).end('{"status":"failure","error":"Not found"}');
      },
      () => response.writeHead(500).end(),
    );
  });
  const stopSockets = faces.attachWebSocket(server, { authTimeoutMs: 200 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: async () => {
      await stopSockets();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
