// An OAP agent for tests, as OAP 0.3's README describes one: its card at `GET /`, its work at `POST /invoke` (a
// TaskEnvelope in, a TaskEnvelope out). It answers as "planner", with the reply `answer` makes of each envelope.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What `answer` returns: the reply's status (200 unless said) and body. */
export type OapReply = { status?: number; body: unknown };

export type OapTestAgent = { url: string; envelopes: unknown[]; close(): Promise<void> };

/** Starts the planner on loopback; every envelope it was sent is kept in `envelopes`, in order. */
export async function startOapPlanner(answer: (envelope: Record<string, unknown>) => OapReply): Promise<OapTestAgent> {
  const envelopes: unknown[] = [];
  const server = createServer((request, response) => {
    const json = (status: number, value: unknown) =>
      void response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    if (request.method === 'GET' && request.url === '/')
      return json(200, {
        agent_id: 'planner',
        description: 'Plans a trip itinerary.',
        capabilities: ['itinerary planning'],
      });
    if (request.method !== 'POST' || request.url !== '/invoke') return json(404, { error: 'Not found' });
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const envelope = JSON.parse(body) as Record<string, unknown>;
      envelopes.push(envelope);
      const reply = answer(envelope);
      json(reply.status ?? 200, reply.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    envelopes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
