// The agent dashboard behind the edge's guard: a web page of another site cannot approve or reject a routine (a
// text/plain POST needs no preflight), even in a browser that holds the token; the same request without Origin
// reaches the dashboard.
import { afterEach, describe, expect, it } from 'vitest';
import { agoraMount } from '../../src/agora/handler.js';
import { createAgentDashboard } from '../../src/dashboard/agent-dashboard.js';
import { compose } from '../../src/edge/mount.js';
import { listen } from '../../src/edge/node.js';
import { silentLogger } from '../../src/log.js';
import { Receiver } from '../../src/receiver.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';

const DOUBLE =
  '---\nname: Double\ndescription: Double a number.\nmultiround: false\n---\n\nThe sender sends JSON {"n": number}; the receiver replies {"doubled": number}.\n';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function agentWithDashboard(tokens: string[]): Promise<string> {
  const folder = await makeAgentFolder({ 'protocols/double.md': DOUBLE });
  const receiver = await Receiver.start({ dir: folder.dir, llm: null, watch: false, logger: silentLogger });
  const dashboard = createAgentDashboard(receiver, { tokens, logger: silentLogger });
  const server = await listen(
    compose([agoraMount(receiver, { logger: silentLogger }), dashboard], { tokens, logger: silentLogger }),
    { port: 0, host: '127.0.0.1', logger: silentLogger },
  );
  cleanups.push(async () => {
    await server.close();
    await receiver.close();
    await folder.cleanup();
  });
  return server.url;
}

describe('agent dashboard and cross-site requests', () => {
  it("refuses a foreign page's text/plain POST to approve a routine, token or not; without Origin it reaches the dashboard", async () => {
    const url = await agentWithDashboard(['s3cret']);
    const approve = `${url}/dashboard/api/routines/double-0000/approve`;
    const withToken = { 'content-type': 'text/plain', authorization: 'Bearer s3cret' };
    const refused = await fetch(approve, {
      method: 'POST',
      headers: { ...withToken, origin: 'http://evil.example' },
      body: '',
    });
    expect([refused.status, await refused.json()]).toEqual([
      403,
      { status: 'failure', error: 'Cross-site request refused' },
    ]);
    const sameSite = await fetch(approve, {
      method: 'POST',
      headers: { ...withToken, 'sec-fetch-site': 'cross-site' },
      body: '',
    });
    expect(sameSite.status).toBe(403);
    // Without Origin the dashboard answers it: no routine by that name here.
    const reached = await fetch(approve, { method: 'POST', headers: withToken, body: '' });
    expect(reached.status).toBe(404);
    expect(((await reached.json()) as { error: string }).error).not.toBe('Cross-site request refused');
    // The page's own origin may act.
    const own = await fetch(approve, { method: 'POST', headers: { ...withToken, origin: url }, body: '' });
    expect(own.status).toBe(404);
  });
});
