// The agent as a composition of mounts: the Agora wire first, then its faces, then its dashboard, behind one edge.
// Loaded on first use by `startServer`/`startAgent` (the edge, the faces and the dashboard are server machinery an
// agent author's import never pays for).
import { agoraMount, type HttpOptions } from '../agora/handler.js';
import { agoraEnabled, facesFor, type FacesConfig } from '../bindings/faces.js';
import { createAgentDashboard, type AgentDashboard } from '../dashboard/agent-dashboard.js';
import { compose, DEFAULT_MAX_BODY_BYTES, type Edge, type Mount } from '../edge/mount.js';
import { listen, type ListenOptions, type RunningServer } from '../edge/node.js';
import { consoleLogger } from '../log.js';
import { Receiver, type ReceiverApi } from '../receiver.js';

/** What an agent serves beside the Agora wire: its faces, its dashboard, and any mounts of the caller's. */
export type AgentMountOptions = HttpOptions & {
  /** The ROAR, OAP and A2A faces (default: all, with the receiver's name and memory); `false` serves Agora alone. */
  faces?: FacesConfig | false;
  /** `GET /dashboard`: made for a `Receiver` by default (its tokens are `tokens`); pass one to close it yourself, or `false`. */
  dashboard?: AgentDashboard | false;
  /** More mounts, served after the agent's own (a mount's routes may not take the agent's). */
  mounts?: readonly Mount[];
  /** Clock in milliseconds (default `Date.now`) for the faces' signature freshness, injected by tests. */
  now?: () => number;
};

/** Options of `startServer`: the agent's mounts, its edge, and where to listen. */
export type ServerOptions = AgentMountOptions & ListenOptions;

/** The edge of an agent: [agora, ...faces, dashboard, ...mounts] behind one guard; `tokenAdvice` tells the dashboard how tokens are set here. */
export function agentEdge(receiver: ReceiverApi, options: AgentMountOptions = {}, tokenAdvice?: string): Edge {
  const logger = options.logger ?? consoleLogger();
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const faces = facesFor(receiver, options.faces, {
    maxBodyBytes,
    tokensRequired: (options.tokens ?? []).length > 0 || options.oauth !== undefined,
    oauth: options.oauth,
    logger,
    ...(options.publicUrl !== undefined ? { publicUrl: options.publicUrl } : {}),
    ...(options.now ? { now: options.now } : {}),
  });
  const dashboard =
    options.dashboard === false
      ? undefined
      : (options.dashboard ??
        (receiver instanceof Receiver
          ? createAgentDashboard(receiver, {
              logger,
              ...(options.tokens ? { tokens: options.tokens } : {}),
              ...(options.oauth ? { oauth: true } : {}),
              ...(tokenAdvice !== undefined ? { tokenAdvice } : {}),
            })
          : undefined));
  const mounts: Mount[] = [];
  // Without the Agora wire the first mount still answers what nobody takes (its 404 in its own shape).
  if (agoraEnabled(options.faces) || faces.length === 0) mounts.push(agoraMount(receiver, { ...options, logger }));
  mounts.push(...faces);
  if (dashboard) mounts.push(dashboard);
  mounts.push(...(options.mounts ?? []));
  return compose(mounts, { ...options, logger });
}

/**
 * Serves a receiver on node:http with its faces and dashboard.
 * @example const { url, close } = await serveReceiver(receiver, { port: 0 });
 */
export function serveReceiver(receiver: ReceiverApi, options: ServerOptions = {}): Promise<RunningServer> {
  return listen(agentEdge(receiver, options), options);
}
