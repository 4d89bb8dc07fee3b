// `agora-agents/express`: an agent's edge (the Agora wire, its faces, its dashboard) as an Express router.
import type { Server } from 'node:http';
import express, { type Router } from 'express';
import { agentEdge, type AgentMountOptions } from './agent/mounts.js';
import { ROUTER_TOKEN_ADVICE } from './dashboard/access.js';
import type { StreamingOptions } from './edge/events.js';
import { edgeMiddleware } from './edge/express.js';
import type { Edge } from './edge/mount.js';
import { SocketRouter, type SocketLimits } from './edge/sockets.js';
import type { ReceiverApi } from './receiver.js';

export { edgeMiddleware } from './edge/express.js';

/** Options of {@link agoraRouter}: the agent's mounts and guard, and how streams are written. */
export type RouterOptions = AgentMountOptions & StreamingOptions;

/** The router, with its edge and the hook that serves the faces' WebSockets (`/roar/ws`) on your node:http server. */
export type AgoraRouter = Router & {
  edge: Edge;
  /** Serves the edge's WebSocket routes on a node:http server, behind the same guard; returns the stopper. */
  attachSockets(server: Server, limits?: SocketLimits): () => void;
};

/**
 * An Express router serving a receiver's endpoints (spec §2), its faces and its dashboard under any prefix, with or
 * without `express.json()` before it. Mount it before body parsers to have their errors answered as Agora JSON too.
 * Its dashboard needs `tokens` when the host app listens beyond loopback; A2A clients find the card at the host's
 * root through {@link wellKnownRouter}.
 * @example app.use('/agora', agoraRouter(receiver, { tokens: [process.env.AGORA_TOKEN!] }));
 */
export function agoraRouter(receiver: ReceiverApi, options: RouterOptions = {}): AgoraRouter {
  const edge = agentEdge(receiver, options, ROUTER_TOKEN_ADVICE);
  const router = express.Router() as AgoraRouter;
  router.use(edgeMiddleware(edge, options));
  router.edge = edge;
  router.attachSockets = (server, limits) => {
    const sockets = new SocketRouter(edge, limits);
    server.on('upgrade', sockets.upgrade);
    return () => {
      server.off('upgrade', sockets.upgrade);
      sockets.close();
    };
  };
  return router;
}

// A2A clients ask the host's root, never a prefix (A2A 1.0 and 0.3's names).
const WELL_KNOWN_PATHS = ['/.well-known/agent-card.json', '/.well-known/agent.json'];

/**
 * A router for the host's root serving the A2A agent card of an agent mounted under `prefix`, where A2A clients
 * look for it; the card's endpoint stays under the prefix. Nothing is served when the agent's A2A face is off.
 * @example const agora = agoraRouter(receiver); app.use('/agora', agora); app.use(wellKnownRouter(agora, '/agora'));
 */
export function wellKnownRouter(agora: Pick<AgoraRouter, 'edge'>, prefix: string): Router {
  const router = express.Router();
  router.get(WELL_KNOWN_PATHS, edgeMiddleware(agora.edge, { prefix: prefix.replace(/\/+$/, '') }));
  return router;
}
