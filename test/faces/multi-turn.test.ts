// A conversation through every face, driven by the peers' own clients in their default flows: the counter protocol
// reaches 1, 2, 3 through A2A (@a2a-js/sdk), ROAR (its SDK's client over HTTP and the WebSocket) and MCP (its SDK's
// client, one session), with and without tokens. (--workers on Redis: test/cli/workers.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent.js';
import type { Logger } from '../../src/log.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';
import { COUNTER_FILES } from '../helpers/counter-agent.js';
import { a2aTurns, mcpTurns, roarHttpTurns, roarSocketTurns } from '../helpers/face-clients.js';

const QUIET: Logger = { info() {}, warn() {}, error() {} };

for (const tokens of [[], ['alice-token', 'bob-token']]) {
  describe(`a conversation through each face, as the peers' clients hold it (${tokens.length ? 'with --token' : 'tokenless'})`, () => {
    let folder: Awaited<ReturnType<typeof makeAgentFolder>>;
    let agent: RunningAgent;
    const token = tokens[0];
    const other = tokens[1];
    beforeAll(async () => {
      folder = await makeAgentFolder(COUNTER_FILES);
      agent = await startAgent({
        dir: folder.dir,
        port: 0,
        host: '127.0.0.1',
        llm: null,
        logger: QUIET,
        watch: false,
        dashboard: false,
        ...(tokens.length ? { tokens } : {}),
      });
    });
    afterAll(async () => {
      await agent.close();
      await folder.cleanup();
    });

    it('A2A, @a2a-js/sdk default flow: no contextId first, then the returned one', async () => {
      const turns = await a2aTurns(agent.url, 3, token ? { token } : {});
      expect(turns.counts).toEqual([1, 2, 3]);
      expect(new Set(turns.ids).size).toBe(1);
    });

    it('A2A over message streams: the same conversation', async () => {
      const turns = await a2aTurns(agent.url, 3, { stream: true, ...(token ? { token } : {}) });
      expect(turns.counts).toEqual([1, 2, 3]);
    });

    it("A2A with the client's own contextId: kept, echoed, and another caller's same id is another conversation", async () => {
      const mine = await a2aTurns(agent.url, 2, { contextId: 'ctx-chosen-by-client', ...(token ? { token } : {}) });
      expect(mine).toMatchObject({ counts: [1, 2], ids: ['ctx-chosen-by-client', 'ctx-chosen-by-client'] });
      if (other !== undefined) {
        expect((await a2aTurns(agent.url, 1, { contextId: 'ctx-chosen-by-client', token: other })).counts).toEqual([1]);
        expect((await a2aTurns(agent.url, 1, { contextId: 'ctx-chosen-by-client', token })).counts).toEqual([3]);
      } else expect((await a2aTurns(agent.url, 1, { contextId: 'ctx-chosen-by-client' })).counts).toEqual([3]);
    });

    it("ROAR over HTTP: the client's session_id kept and echoed, turn after turn", async () => {
      const turns = await roarHttpTurns(agent.url, 3, 'roar-http-session', token ? { token } : {});
      expect(turns).toEqual({
        counts: [1, 2, 3],
        pids: [process.pid, process.pid, process.pid],
        ids: ['roar-http-session', 'roar-http-session', 'roar-http-session'],
      });
      if (other !== undefined)
        expect((await roarHttpTurns(agent.url, 1, 'roar-http-session', { token: other })).counts).toEqual([1]);
    });

    it('ROAR over the WebSocket: one frame per message, the same conversation across sockets', async () => {
      const turns = await roarSocketTurns(agent.url, 3, 'roar-ws-session', token ? { token } : {});
      expect(turns.counts).toEqual([1, 2, 3]);
      expect(turns.ids).toEqual(['roar-ws-session', 'roar-ws-session', 'roar-ws-session']);
      // The same session over HTTP continues it: one conversation, whichever transport carries the message.
      expect((await roarHttpTurns(agent.url, 1, 'roar-ws-session', token ? { token } : {})).counts).toEqual([4]);
    });

    it('MCP, its SDK client: one session, the tool called three times', async () => {
      const turns = await mcpTurns(agent.url, 3, token ? { token } : {});
      expect(turns.counts).toEqual([1, 2, 3]);
      expect(new Set(turns.ids).size).toBe(1);
    });
  });
}
