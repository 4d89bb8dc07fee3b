// `agora-agents/hub`: a network of agents. The hub (directory, protocol catalogue, routing, chains), its mounts
// (API, rooms, dashboard) and server, its client, and rooms.
export { Hub, type HubOptions, type ProtocolListing } from '../hub/hub.js';
export { HUB_DEFAULTS } from '../hub/defaults.js';
export { MemoryHubStore, type HubStore } from '../hub/store.js';
export { startHub, type StartHubOptions, type RunningHub } from '../hub/server.js';
export { hubMount, type HubMountOptions } from '../hub/http.js';
export { UsageLog, usageMount, type UsageReport, type UsageEntry, type UsageSeries } from '../hub/usage.js';
export { roomsMount, type RoomsMountOptions } from '../hub/rooms/http.js';
export {
  createHubDashboard,
  roomsSource,
  type HubDashboardOptions,
  type RoomsSource,
  type RoomView,
} from '../dashboard/hub-dashboard.js';
export { HubClient, type HubClientOptions, type HubAgent, type HubProtocol } from '../hub/client.js';
export { ClientCredentials, originResource, type TokenSource } from '../net/token-source.js';
export { runChain, resumeChain, type ChainOptions } from '../hub/chains.js';
export type { RouteDecision } from '../hub/routing.js';
export type { AgentRecord, ChainRun, Hop } from '../hub/records.js';
export { Rooms, type RoomsOptions, type RoomAction } from '../hub/rooms/rooms.js';
export { ROOM_DOCUMENT, type TurnQuery, type TurnReply } from '../hub/rooms/document.js';
export { MemoryRoomStore, type RoomStore } from '../hub/rooms/store.js';
export type { RoomRecord, RoomEvent, RoomRequest, RoomState, TranscriptEntry } from '../hub/rooms/records.js';
