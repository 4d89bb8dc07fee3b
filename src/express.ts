// `agora-agents/express`: an agent's edge (the Agora wire, its faces, its dashboard) as an Express router.
import type { Server } from 'node:http';
import express, { type Router } from 'express';
import { agentEdge, type AgentMountOptions } from './agent/mounts.js';
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
 * @example app.use('/agora', agoraRouter(receiver));
 */
export function agoraRouter(receiver: ReceiverApi, options: RouterOptions = {}): AgoraRouter {
  const edge = agentEdge(receiver, options);
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
