// The routes every mount of an agent and of a hub declares, read from the mounts themselves: what docs/http-api.md
// must list (test/http-reference.test.ts checks it). `tsx scripts/http-routes.ts` prints them as a table.
import { agentEdge } from '../src/agent/mounts.js';
import { createAgentDashboard } from '../src/dashboard/agent-dashboard.js';
import { createHubDashboard, roomsSource } from '../src/dashboard/hub-dashboard.js';
import { startHub } from '../src/hub/server.js';
import { silentLogger } from '../src/log.js';
import { Receiver } from '../src/receiver.js';

/** One declared route: the mount that serves it, its path (`/…` and, for a prefix, everything under it) and methods. */
export type DeclaredRoute = { mount: string; path: string; prefix: boolean; allow: string; access: string };

/** Every route of an agent (Agora wire, all faces, dashboard) and of a hub (API, rooms, dashboard). */
export async function declaredRoutes(dir: string): Promise<DeclaredRoute[]> {
  const receiver = await Receiver.start({ dir, llm: null, logger: silentLogger, watch: false });
  const dashboard = createAgentDashboard(receiver, { logger: silentLogger });
  const agent = agentEdge(receiver, { dashboard });
  const hub = await startHub({
    port: 0,
    tickMs: 0,
    logger: silentLogger,
    mounts: (core, rooms) => [createHubDashboard(core, { ...(rooms ? { rooms: roomsSource(rooms) } : {}) })],
  });
  try {
    return [...agent.mounts, ...hub.edge.mounts].flatMap((mount) =>
      mount.routes.map((route) => ({
        mount: mount.name,
        path: route.path,
        prefix: route.prefix === true,
        allow: route.methods?.join(', ') ?? route.allow ?? 'GET, HEAD, POST, OPTIONS',
        access: route.public === true ? 'public' : route.public === 'read' ? 'reads public' : 'token (when set)',
      })),
    );
  } finally {
    await hub.close();
    await agent.close();
    dashboard.close?.();
    await receiver.close();
  }
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  for (const route of await declaredRoutes(new URL('..', import.meta.url).pathname)) {
    process.stdout.write(
      `| ${route.mount} | \`${route.path}\`${route.prefix ? ' (and below)' : ''} | ${route.allow} | ${route.access} |\n`,
    );
  }
}
