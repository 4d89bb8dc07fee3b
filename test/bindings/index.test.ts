// The one list of bindings drives everything that names a foreign protocol: the faces and `--faces`, the peer kinds
// and `agora send --as`, the order agents are recognised in, the hub's kinds, and the headers a browser may send.
import { describe, expect, it } from 'vitest';
import { BINDINGS, FACE_NAMES, FACES, PEER_KINDS, PEERS, PROBES } from '../../src/bindings/index.js';
import { parseFaceList } from '../../src/bindings/faces.js';
import { detectPeerKind } from '../../src/bindings/peers.js';
import { agentRecordSchema } from '../../src/hub/records.js';
import { makeFaces } from '../faces/_helpers.js';

describe('BINDINGS, the one list', () => {
  it('gives the faces and the names --faces takes, in its order', () => {
    expect(FACES).toEqual(BINDINGS.map((binding) => binding.face));
    expect(FACE_NAMES).toEqual(['agora', ...BINDINGS.map((binding) => binding.name)]);
    expect(parseFaceList(BINDINGS.map((binding) => binding.name).join(','))).toEqual(FACE_NAMES.slice(1));
    expect(makeFaces().faces.map((face) => face.name)).toEqual(BINDINGS.map((binding) => binding.name));
  });

  it('gives the peer kinds: Agora, then every binding with a peer client (MCP has none)', () => {
    const withPeer = BINDINGS.filter((binding) => 'peer' in binding).map((binding) => binding.name);
    expect(PEER_KINDS).toEqual(['agora', ...withPeer]);
    expect([...PEERS.keys()]).toEqual(withPeer);
    expect(PEER_KINDS).not.toContain('mcp');
  });

  it("gives the hub's kinds: a record of each peer kind parses, any other kind is refused", () => {
    expect(agentRecordSchema.shape.kind.options).toEqual(PEER_KINDS);
    const record = {
      id: 'a',
      url: 'http://agent.example',
      name: 'a',
      description: '',
      protocols: [],
      capabilities: [],
      status: 'up',
      missedChecks: 0,
      registeredAt: 0,
      lastSeen: 0,
      lastChecked: 0,
    };
    for (const kind of PEER_KINDS) expect(agentRecordSchema.safeParse({ ...record, kind }).success, kind).toBe(true);
    expect(agentRecordSchema.safeParse({ ...record, kind: 'mcp' }).success).toBe(false);
  });

  it('recognises agents by the probes of its bindings, in their order, after /wellknown', async () => {
    expect(PROBES.map((probe) => probe.order)).toEqual([...PROBES.map((probe) => probe.order)].sort((a, b) => a - b));
    expect(PROBES.map((probe) => probe.kind)).toEqual(['roar', 'a2a', 'oap', 'roar']);
    const asked: string[] = [];
    const fetchAll = async (input: string | URL | Request) => {
      asked.push(new URL(String(input instanceof Request ? input.url : input)).pathname);
      return new Response('{}', { status: 404, headers: { 'content-type': 'application/json' } });
    };
    expect(await detectPeerKind('http://agent.example', { fetch: fetchAll as typeof fetch })).toBeUndefined();
    expect(asked).toEqual(['/wellknown', ...PROBES.map((probe) => probe.path)]);
  });

  it('stops at the first probe whose answer is its protocol', async () => {
    const answers: Record<string, unknown> = {
      '/.well-known/agent-card.json': { name: 'a', url: 'http://agent.example/a2a' },
      '/': { agent_id: 'b' },
    };
    const fetchSome = async (input: string | URL | Request) => {
      const answer = answers[new URL(String(input instanceof Request ? input.url : input)).pathname];
      return new Response(JSON.stringify(answer ?? {}), { status: answer ? 200 : 404 });
    };
    expect(await detectPeerKind('http://agent.example', { fetch: fetchSome as typeof fetch })).toBe('a2a');
  });

  it("lets a browser send every face's own headers, which the edge itself does not name", async () => {
    const { edge } = makeFaces({ corsOrigins: ['https://app.example'] });
    const response = await edge.handle({
      method: 'OPTIONS',
      path: '/mcp',
      headers: { origin: 'https://app.example' },
      body: undefined,
    });
    const allowed = String(response.headers['access-control-allow-headers']).split(', ');
    expect(allowed).toEqual(expect.arrayContaining(['authorization', 'a2a-version', 'mcp-session-id']));
  });
});
