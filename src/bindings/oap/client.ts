// A client for OAP agents (Open Agent Protocol 0.3): `GET /` tells what the agent is, `POST /invoke` takes a whole
// TaskEnvelope and answers it. Over the sender's transport (timeouts, capped reads, errors naming method and URL);
// replies are parsed, never trusted.
import { z } from 'zod';
import { AgoraError } from '../../errors.js';
import type { JsonObject, JsonValue } from '../../schemas.js';
import { agentBaseUrl, getJson, PeerTransport, type TransportOptions } from '../../sender/transport.js';
import { readHandoff } from '../chain.js';
import { readOapStep, type OapEnvelope, type OapHandoff, type OapStep } from './envelope.js';

/** What an OAP agent's `GET /` says about it. */
export type OapInfo = { agentId?: string; description?: string; capabilities: string[] };

/** What an OAP agent answered: its result (OAP's adapter rule: `result` wins over `memory.last_result`), its handoff. */
export type OapReply = {
  result: JsonValue;
  handoff?: OapHandoff & { goal?: string };
  stepsTaken: OapStep[];
  memory: JsonObject;
};

const infoSchema = z.object({
  agent_id: z.string().max(200).optional(),
  capabilities: z.array(z.string().max(100)).max(100).optional(),
  description: z.string().max(2000).optional(),
});

const replySchema = z.object({
  memory: z.record(z.string(), z.unknown()).nullish(),
  result: z.unknown().optional(),
  steps_taken: z.array(z.unknown()).max(10_000).nullish(),
  handoff: z.unknown().optional(),
});

/** Reads an OAP agent's reply envelope: `result` wins over `memory.last_result` (OAP's adapter), then its handoff. */
export function readOapReply(json: unknown, what: string): OapReply {
  const parsed = replySchema.safeParse(json);
  if (!parsed.success || typeof json !== 'object' || json === null || Array.isArray(json))
    throw new AgoraError('PEER_FAILURE', `${what}: not an OAP envelope`);
  const memory = (parsed.data.memory ?? {}) as JsonObject;
  const fromResult = parsed.data.result !== undefined && parsed.data.result !== null;
  const result = (fromResult ? parsed.data.result : (memory.last_result ?? null)) as JsonValue;
  const handoff = readHandoff(parsed.data.handoff);
  // Steps as OAP writes them, or bare agent names (older peers); anything else is left out, not trusted.
  const stepsTaken = (parsed.data.steps_taken ?? []).map(readOapStep).filter((step) => step !== undefined);
  return { result, memory, stepsTaken, ...(handoff ? { handoff } : {}) };
}

/** OAP's error body `{error: code}`: the code only when it is a short token (a peer's free text is not repeated). */
function errorCode(json: unknown): string {
  const code = typeof json === 'object' && json !== null ? (json as { error?: unknown }).error : undefined;
  return typeof code === 'string' && /^[\w.-]{1,60}$/.test(code) ? ` (${code})` : '';
}

/**
 * A client for OAP agents: discovery (`GET /`) and `POST /invoke` with a full TaskEnvelope.
 * @example const reply = await new OapClient().invoke('http://localhost:9000', oapEnvelope({ goal: 'research vector databases' }));
 */
export class OapClient {
  readonly #transport: PeerTransport;

  constructor(options: TransportOptions = {}) {
    this.#transport = new PeerTransport(options);
  }

  /** The agent's `GET /`: its id, description and capabilities (a GET, tried again when a connection fails). */
  async discover(url: string, signal?: AbortSignal): Promise<OapInfo> {
    const target = `${agentBaseUrl(url)}/`;
    const parsed = infoSchema.safeParse(await getJson(this.#transport, target, signal ? { signal } : {}));
    if (!parsed.success) throw new AgoraError('PEER_FAILURE', `GET ${target}: not an OAP agent description`);
    const { agent_id: agentId, description, capabilities } = parsed.data;
    return {
      ...(agentId ? { agentId } : {}),
      ...(description ? { description } : {}),
      capabilities: capabilities ?? [],
    };
  }

  /** Sends an envelope to `POST /invoke` (never retried: the agent may have acted) and reads its reply. */
  async invoke(url: string, envelope: OapEnvelope, signal?: AbortSignal): Promise<OapReply> {
    const target = `${agentBaseUrl(url)}/invoke`;
    const response = await this.#transport.exchange('POST', target, envelope, signal);
    const json = this.#transport.parseJson('POST', target, response);
    // An OAP failure is an HTTP error whose body may well parse as an (empty) envelope: never a result.
    if (response.status < 200 || response.status > 299)
      throw new AgoraError('PEER_FAILURE', `POST ${target}: HTTP ${response.status}${errorCode(json)}`, {
        status: response.status,
      });
    return readOapReply(json, `POST ${target}`);
  }
}
