// The Agora wire's statuses (spec §2): its own failures answer 200 with their fixed text; the rest as on any wire.
import type { AgoraErrorCode } from '../errors.js';
import { httpStatus } from '../edge/status.js';

/** The codes the Agora wire answers with HTTP 200 and `{"status": "failure", "error": …}`: Agora-level failures. */
const AGORA_LEVEL: ReadonlySet<AgoraErrorCode> = new Set<AgoraErrorCode>([
  'UNSUPPORTED_PROTOCOL',
  'CONVERSATION_EXPIRED',
  'NATURAL_LANGUAGE_UNSUPPORTED',
  'ROUTINE_FAILED',
  'LLM_UNAVAILABLE',
  'TOO_MANY_CONVERSATIONS',
  'SOURCE_FAILED',
  'NEGOTIATION_FAILED',
  'INVALID_OUTPUT',
]);

/** The status a code answers with on the Agora wire, where Agora-level failures are 200 (spec §2). */
export function agoraStatus(code: AgoraErrorCode): number {
  return AGORA_LEVEL.has(code) ? 200 : httpStatus(code);
}
