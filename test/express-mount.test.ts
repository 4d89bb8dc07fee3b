// agoraRouter in a host app as docs/library.md shows it: the dashboard's refusal speaks of the router's `tokens`
// option (not the CLI's flag), and wellKnownRouter serves the A2A card at the host's root, its endpoint under the prefix.
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { agoraRouter, wellKnownRouter } from '../src/express.js';
import { silentLogger } from '../src/log.js';
import { Receiver } from '../src/receiver.js';
import { makeAgentFolder } from './helpers/agent-folder.js';

const DOUBLE =
  '---\nname: Double\ndescription: Double a number.\nmultiround: false\n---\n\nThe sender sends JSON {"n": number}; the receiver replies {"doubled": number}.\n';
const ROUTINE = 'export default { async handle(body) { return { doubled: body.n * 2 }; } };\n';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function hostApp(options: { tokens?: string[]; faces?: false; wellKnown?: boolean }) {
  const folder = await makeAgentFolder({ 'protocols/double.md': DOUBLE, 'routines/double.ts': ROUTINE });
  const receiver = await Receiver.start({ dir: folder.dir, llm: null, watch: false, logger: silentLogger });
  const app = express();
  const agora = agoraRouter(receiver, {
    logger: silentLogger,
    ...(options.tokens ? { tokens: options.tokens } : {}),
    ...(options.faces === false ? { faces: false } : {}),
  });
  app.use('/agora', agora);
  if (options.wellKnown !== false) app.use(wellKnownRouter(agora, '/agora'));
  app.get('/', (_request, response) => void response.send('host home'));
  // All interfaces, as a host app usually listens.
  const server = app.listen(0, '0.0.0.0');
  await new Promise((resolve) => server.once('listening', resolve));
  cleanups.push(async () => {
    await new Promise((resolve) => server.close(resolve));
    await receiver.close();
    await folder.cleanup();
  });
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

describe('agoraRouter in a host app', () => {
  it('refuses the dashboard on all interfaces without a token, advising the router option, and serves it with one', async () => {
    const root = await hostApp({});
    const refused = await fetch(`${root}/agora/dashboard/api/overview`);
    expect(refused.status).toBe(403);
    const { error } = (await refused.json()) as { error: string };
    expect(error).toContain("agoraRouter(receiver, { tokens: ['<secret>'] })");
    expect(error).not.toContain('--token');

    const signed = await hostApp({ tokens: ['s3cret'] });
    expect(
      (await fetch(`${signed}/agora/dashboard/api/overview`, { headers: { authorization: 'Bearer s3cret' } })).status,
    ).toBe(200);
  });

  it('serves the A2A card at the host root with wellKnownRouter, its endpoint under the prefix', async () => {
    const root = await hostApp({ tokens: ['s3cret'] });
    for (const path of ['/.well-known/agent-card.json', '/.well-known/agent.json']) {
      const response = await fetch(`${root}${path}`);
      expect(response.status).toBe(200);
      const card = (await response.json()) as { name: string; supportedInterfaces: { url: string }[] };
      expect(card.supportedInterfaces[0]!.url).toBe(`${root}/agora/a2a`);
    }
    const underPrefix = (await (await fetch(`${root}/agora/.well-known/agent-card.json`)).json()) as {
      supportedInterfaces: { url: string }[];
    };
    expect(underPrefix.supportedInterfaces[0]!.url).toBe(`${root}/agora/a2a`);
    expect(await (await fetch(`${root}/`)).text()).toBe('host home');
  });

  it('leaves the host root alone without wellKnownRouter, or when the faces are off', async () => {
    const without = await hostApp({ wellKnown: false });
    expect((await fetch(`${without}/.well-known/agent-card.json`)).status).toBe(404);
    const facesOff = await hostApp({ faces: false });
    expect((await fetch(`${facesOff}/.well-known/agent-card.json`)).status).toBe(404);
  });
});
