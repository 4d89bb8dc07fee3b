// `agora-agents/faces`: the other protocols an agent speaks (ROAR, OAP, A2A, MCP) as mounts of its edge, each from
// its binding in `BINDINGS`, and the parts a face is made of.
export {
  a2aFace,
  agoraEnabled,
  createFaces,
  mcpFace,
  oapFace,
  parseFaceList,
  roarFace,
  type FaceOptions,
  type FacesConfig,
  type FacesOptions,
  type SharedEdge,
} from '../bindings/faces.js';
export { BINDINGS, FACES, FACE_NAMES, PEER_KINDS, type FaceName, type PeerKind } from '../bindings/index.js';
export type { Binding, PeerClient, PeerOptions, PeerQuery, Probe } from '../bindings/binding.js';
export type { Face, FaceContext, FaceDefinition } from '../faces/face.js';
export type { StreamAnswer, StreamEvent } from '../faces/stream.js';
export type { A2aOptions } from '../bindings/a2a/face.js';
export type { McpOptions } from '../bindings/mcp/face.js';
export type { RoarFace, RoarOptions } from '../bindings/roar/face.js';
export type { RoarSocketOptions } from '../bindings/roar/ws.js';
export type { RoarEventOptions } from '../bindings/roar/events.js';
export type { RoarIdentity } from '../bindings/roar/identity.js';
export { MemoryReplayGuard, type ReplayGuard } from '../bindings/roar/replay.js';
