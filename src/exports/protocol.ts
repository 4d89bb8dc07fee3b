// `agora-agents/protocol`: protocol documents and where they come from, negotiation (spec §5), and the wire
// profile's conformance cases (`agora check`).
export {
  parseDocument,
  hashText,
  normalizeHash,
  encodeHash,
  formatDocument,
  documentFileName,
  type ProtocolDocument,
  type ProtocolMetadata,
  type HashEncoding,
} from '../protocol/document.js';
export { ProtocolRegistry, type KnownDocument, type RegistryOptions } from '../protocol/registry.js';
export { resolveSources, decodeDataUri, encodeDataUri, type SourceOptions } from '../protocol/sources.js';
export {
  negotiateProtocol,
  respondToNegotiation,
  writeProtocolFile,
  type NegotiateOptions,
  type NegotiationResult,
  type NegotiationTask,
  type NegotiationMessage,
} from '../negotiation.js';
export { checkAgent, type CaseResult, type CheckOptions } from '../conformance.js';
