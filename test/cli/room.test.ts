import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type RunningHub } from '../../src/hub/server.js';
import { silentLogger } from '../../src/log.js';
import { runCli } from '../helpers/cli.js';
import { startParticipants } from '../hub/rooms/_agents.js';

describe('agora room', () => {
  let hub: RunningHub;
  let participants: Awaited<ReturnType<typeof startParticipants>>;
  beforeAll(async () => {
    participants = await startParticipants(['plain', 'plain']);
    hub = await startHub({ port: 0, tickMs: 0, allowPrivateAgents: true, logger: silentLogger, tokens: ['t0k'] });
  });
  afterAll(async () => {
    await hub.close();
    await participants.close();
  });

  it('creates a room, watches it to its end as it happens, and shows it', async () => {
    const env = { AGORA_HUB: hub.url, AGORA_HUB_TOKEN: 't0k' };
    const [first, second] = participants.agents.map((agent) => agent.url);
    const created = await runCli(
      ['room', 'create', '--topic', 'CLI room', '--participant', first!, '--participant', second!, '--max-turns', '4'],
      { env },
    );
    expect(created.stderr).toBe('');
    expect(created.code, 'agora room create').toBe(0);
    const id = created.stdout.trim();
    expect(id).not.toBe('');
    const watched = await runCli(['room', 'watch', id], { env });
    expect(watched.code, `agora room watch: ${watched.stderr}`).toBe(0);
    expect(watched.stdout.match(/^— turn \d+:/gm)).toHaveLength(4);
    expect(watched.stdout.trim().split('\n').at(-1)).toBe('room ended: 4 turns taken');
    const shown = JSON.parse((await runCli(['room', 'show', id], { env })).stdout) as { state: string; turns: number };
    expect(shown).toMatchObject({ state: 'completed', turns: 4 });
    const refused = await runCli(['room', 'show', id], { env: { AGORA_HUB: hub.url } });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('HTTP 401');
  });
});
