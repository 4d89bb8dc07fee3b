// What a registration is and what the directory keeps of one: the agent's id, the registrant's digest, the
// capabilities and protocols as listed, and the rule that only the first registrant may rename an agent.
import { createHash } from 'node:crypto';
import { AgoraError } from '../errors.js';
import type { ProtocolDocument } from '../protocol/document.js';
import type { AgentProtocol, AgentRecord } from './records.js';

/** The longest free text (a description) a record keeps. */
export const MAX_TEXT = 2000;
/** The longest protocol name a record keeps. */
const MAX_NAME = 200;

/**
 * What `POST /agents` takes; `registrant` is a digest of the caller's token (`registrantOf`), when it sent one. A
 * name, description or capabilities given here win over what the agent says of itself (an agent that says nothing,
 * such as a card-less ROAR agent, is known only by them).
 */
export type Registration = {
  url: string;
  name?: string;
  description?: string;
  capabilities?: string[];
  registrant?: string;
  client?: string;
};

/** Capabilities kept per agent, and the longest one. */
export const MAX_CAPABILITIES = 100;
const MAX_CAPABILITY_LENGTH = 100;

/** A registration's capabilities, checked: undefined when not given; each trimmed, empty ones and repeats dropped. */
export function givenCapabilities(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string'))
    throw new AgoraError('BAD_REQUEST', 'capabilities must be an array of strings');
  const capabilities = [...new Set(value.map((item) => item.trim()).filter((item) => item !== ''))];
  if (capabilities.length > MAX_CAPABILITIES)
    throw new AgoraError('BAD_REQUEST', `capabilities: at most ${MAX_CAPABILITIES}`);
  if (capabilities.some((item) => item.length > MAX_CAPABILITY_LENGTH))
    throw new AgoraError('BAD_REQUEST', `capabilities: each at most ${MAX_CAPABILITY_LENGTH} characters`);
  return capabilities;
}

/**
 * The digest a registration keeps of the caller's bearer token: proof, later, that a registration is the same agent's.
 */
export function registrantOf(token: string | undefined): string | undefined {
  return token === undefined || token === ''
    ? undefined
    : createHash('sha256').update(`agora-registrant\u0000${token}`).digest('hex').slice(0, 32);
}

/** A record as the hub serves it: without its registrant digest. */
export function publicRecord<T extends AgentRecord>(record: T): Omit<T, 'registrant'> {
  const { registrant: _kept, ...rest } = record;
  return rest;
}

/** The directory id of an agent URL: stable, so registering the same URL again updates its record. */
export function agentId(url: string): string {
  return createHash('sha1').update(url).digest('hex').slice(0, 16);
}

/** An agent's protocols as its record lists them: hash, name, description (cut) and whether multiround. */
export function listedProtocols(documents: readonly ProtocolDocument[]): AgentProtocol[] {
  return documents.map(({ hash, metadata }) => ({
    hash,
    name: metadata.name.slice(0, MAX_NAME),
    description: metadata.description.slice(0, MAX_TEXT),
    multiround: metadata.multiround,
  }));
}

/**
 * Refuses (409) a new name, description or capabilities for a URL registered with a token, unless they come with
 * that token: the first registrant keeps what it said of its agent.
 */
export function refuseTakeover(
  previous: AgentRecord,
  registration: Registration,
  name: string,
  capabilities: string[] | undefined,
): void {
  if (previous.registrant === undefined || previous.registrant === registration.registrant) return;
  const renames =
    (registration.name !== undefined && name !== previous.name) ||
    (registration.description !== undefined && registration.description.trim() !== previous.description);
  const recapabilities =
    capabilities !== undefined && capabilities.join('\u0000') !== previous.capabilities.join('\u0000');
  if (renames || recapabilities)
    throw new AgoraError(
      'CONFLICT',
      `${previous.url} was registered with a token; only that token may change its name, description or capabilities`,
    );
}
