// `agora-agents/edge`: serving. The one HTTP toolkit (mounts behind one guard, on node:http or Express), the Agora
// wire as a mount, an agent's composition of mounts, and the agent's dashboard.
export {
  compose,
  DEFAULT_MAX_BODY_BYTES,
  type Edge,
  type EdgeOptions,
  type Mount,
  type MountedRequest,
  type MountRoute,
} from '../edge/mount.js';
export { listen, type ListenOptions, type RunningServer } from '../edge/node.js';
export { requestTarget, type EdgeRequest } from '../edge/request.js';
export {
  failure,
  json,
  eventStream,
  type EdgeResponse,
  type EventStream,
  type SocketSession,
} from '../edge/response.js';
export { FeedChannel, sseFrame, writeEvents, type StreamingOptions } from '../edge/events.js';
export { readJson } from '../edge/body.js';
export { TokenCheck, RateLimiter, clientKey, callerKey, isCrossSite, type RateLimitOptions } from '../edge/guard.js';
export { SocketRouter, type SocketLimits } from '../edge/sockets.js';
export { agoraMount, createHandler, type AgoraOptions, type HttpOptions } from '../agora/handler.js';
export { agentEdge, serveReceiver, type AgentMountOptions, type ServerOptions } from '../agent/mounts.js';
export { createAgentDashboard, type AgentDashboard, type AgentDashboardOptions } from '../dashboard/agent-dashboard.js';
