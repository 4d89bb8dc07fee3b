// Reads what an agent says about itself: `/wellknown` and its documents (each verified by hash), its ROAR card, its
// A2A card and its OAP `GET /` where it has them, else ROAR's `/roar/health` (a card-less ROAR agent, which says
// nothing of itself: its name and capabilities come with its registration); what it serves tells its kind (Agora,
// ROAR, A2A, OAP, that order). Every read goes through the SSRF guard, size cap and time limit of
// protocol sources (src/protocol/sources.ts): the hub fetches URLs strangers give it.
import { z } from 'zod';
import { AgoraError, describeError } from '../errors.js';
import { hashText, normalizeHash, parseDocument, type ProtocolDocument } from '../protocol/document.js';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { decodeDataUri, fetchSource, isForbiddenAddress, type SourceOptions } from '../protocol/sources.js';
import { isRoarHealth } from '../sender/peers/roar.js';

/** How the hub reads agents: the source options (private networks, time, size), and caps. */
export type ReadOptions = Pick<SourceOptions, 'allowPrivateSources' | 'timeoutMs' | 'lookup' | 'headers'> & {
  /** Largest `/wellknown`, card or document accepted, in bytes (default 256 KiB). */
  maxBytes?: number;
  /** Protocols kept per agent (default 100); more are ignored. */
  maxProtocols?: number;
};

/** What an agent told the hub about itself. */
export type AgentReading = {
  kind: 'agora' | 'oap' | 'roar' | 'a2a';
  name?: string;
  description?: string;
  capabilities: string[];
  /** Documents read and verified (hash of the exact bytes = the hash listed). */
  documents: ProtocolDocument[];
  /** Listed hashes whose documents could not be had, or came under another hash: never trusted. */
  problems: string[];
};

const wellknownSchema = z.record(z.string(), z.array(z.string()));
const oapInfoSchema = z.object({
  agent_id: z.string().max(200).optional(),
  capabilities: z.array(z.string().max(100)).max(100).optional(),
  description: z.string().max(2000).optional(),
});
const roarCardSchema = z.object({
  identity: z
    .object({
      did: z.string().min(1).max(600),
      display_name: z.string().max(200).optional(),
      capabilities: z.array(z.string().max(100)).max(100).optional(),
    })
    .optional(),
  display_name: z.string().max(200).optional(),
  name: z.string().max(200).optional(),
  description: z.string().max(2000).optional(),
  capabilities: z.array(z.string().max(100)).max(100).optional(),
  skills: z.array(z.string().max(200)).max(100).optional(),
  declared_capabilities: z
    .array(z.object({ name: z.string().max(200) }))
    .max(100)
    .optional(),
});
// An A2A card, 1.0 (`supportedInterfaces`) or 0.3 (`url`): its name, description and skills (names and tags).
const a2aCardSchema = z
  .object({
    name: z.string().max(200),
    description: z.string().max(2000).optional(),
    supportedInterfaces: z
      .array(z.object({ url: z.string().max(2000) }))
      .max(20)
      .optional(),
    url: z.string().max(2000).optional(),
    skills: z
      .array(
        z.object({
          name: z.string().max(200),
          description: z.string().max(2000).optional(),
          tags: z.array(z.string().max(100)).max(50).optional(),
        }),
      )
      .max(100)
      .optional(),
  })
  .refine(
    (card) => (card.supportedInterfaces?.length ?? 0) > 0 || card.url !== undefined,
    'an A2A card names an interface',
  );

/** What an A2A card gives as capabilities: its skills' names, then their tags. */
function a2aCapabilities(card: z.infer<typeof a2aCardSchema>): string[] {
  const skills = card.skills ?? [];
  return [...skills.map((skill) => skill.name), ...skills.flatMap((skill) => skill.tags ?? [])];
}

/** What a ROAR card gives as capabilities: its identity's capabilities, skills and declared capabilities' names. */
function roarCapabilities(card: z.infer<typeof roarCardSchema>): string[] {
  return [
    ...(card.identity?.capabilities ?? []),
    ...(card.capabilities ?? []),
    ...(card.skills ?? []),
    ...(card.declared_capabilities ?? []).map((capability) => capability.name),
  ];
}

/** A base URL as the directory keys it: http(s) only, no query, fragment or credentials, no trailing slash. */
export function normalizeAgentUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new AgoraError('BAD_REQUEST', `Not a valid agent URL: ${JSON.stringify(raw.slice(0, 200))}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new AgoraError('BAD_REQUEST', `Agent URL must be http or https: ${url.protocol}`);
  if (url.username || url.password) throw new AgoraError('BAD_REQUEST', 'Agent URL must not carry credentials');
  if (raw.length > 2000) throw new AgoraError('BAD_REQUEST', 'Agent URL is longer than 2000 characters');
  url.search = '';
  url.hash = '';
  return url.href.replace(/\/+$/, '');
}

/**
 * Refuses (400) an agent URL whose host is, or resolves to, a loopback, private, link-local or metadata address,
 * unless private agents are allowed: the request is refused, no peer failed.
 */
export async function vetAgentUrl(
  url: string,
  options: Pick<ReadOptions, 'allowPrivateSources' | 'lookup'>,
): Promise<void> {
  if (options.allowPrivateSources === true) return;
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (isIP(host) !== 0) addresses = [host];
  else {
    try {
      addresses = options.lookup
        ? (await options.lookup(host)).map(({ address }) => address)
        : (await dnsLookup(host, { all: true, verbatim: true })).map(({ address }) => address);
    } catch {
      throw new AgoraError('BAD_REQUEST', `Cannot resolve ${host}`);
    }
  }
  if (addresses.some((address) => isForbiddenAddress(address))) {
    throw new AgoraError(
      'BAD_REQUEST',
      `${host} is a loopback or private address, which this hub refuses (start it with --allow-private-agents to accept such agents)`,
    );
  }
}

async function getJson(url: string, options: ReadOptions): Promise<unknown> {
  const bytes = await fetchSource(url, { ...options, maxBytes: options.maxBytes ?? 256 * 1024, maxRedirects: 0 });
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new AgoraError('SOURCE_FAILED', `${url} did not answer JSON`);
  }
}

/** A JSON value as an object's fields (none when it is not an object). */
function objectOf(json: unknown): Record<string, unknown> {
  return typeof json === 'object' && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : {};
}

async function optional<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch {
    return undefined;
  }
}

/**
 * Reads one document listed at `/wellknown`: the agent's own `/protocols/:hash` first, then the sources it
 * listed; bytes under another hash are refused (and reported), never parsed.
 */
async function readDocument(
  base: string,
  hash: string,
  sources: string[],
  options: ReadOptions,
): Promise<{ document?: ProtocolDocument; problem?: string }> {
  const candidates = [`${base}/protocols/${hash}`, ...sources.slice(0, 5)];
  let problem = `no source of ${hash} could be read`;
  for (const source of [...new Set(candidates)]) {
    let bytes: Buffer | undefined;
    try {
      if (/^data:/i.test(source)) bytes = decodeDataUri(source);
      else
        bytes = await fetchSource(new URL(source, `${base}/`).href, {
          ...options,
          maxBytes: options.maxBytes ?? 256 * 1024,
        });
    } catch (error) {
      problem = `${hash}: ${error instanceof AgoraError ? error.message : describeError(error)}`;
      continue;
    }
    if (bytes === undefined) continue;
    const actual = hashText(bytes);
    if (actual !== hash) {
      problem = `${hash}: the document served hashes to ${actual} (refused)`;
      continue;
    }
    try {
      return { document: parseDocument(bytes, `${hash}`) };
    } catch (error) {
      return { problem: error instanceof Error ? error.message : String(error) };
    }
  }
  return { problem };
}

/**
 * Reads an agent at `base`: `/wellknown`, documents, ROAR card, A2A card, OAP `GET /`, else ROAR's `/roar/health`;
 * throws SOURCE_FAILED when the agent answers none of them. `known(hash)` gives documents the hub already holds, so they are not fetched again.
 */
export async function readAgent(
  base: string,
  options: ReadOptions,
  known: (hash: string) => Promise<ProtocolDocument | undefined>,
  withProfile = true,
): Promise<AgentReading> {
  const maxProtocols = options.maxProtocols ?? 100;
  let listing: Record<string, string[]> | undefined;
  let wellknownError: unknown;
  try {
    const parsed = wellknownSchema.safeParse(await getJson(`${base}/wellknown`, options));
    if (!parsed.success) throw new AgoraError('SOURCE_FAILED', `${base}/wellknown is not a map of hashes to sources`);
    listing = parsed.data;
  } catch (error) {
    wellknownError = error;
  }
  const [card, a2a, oap] =
    withProfile || listing === undefined
      ? await Promise.all([
          optional(async () => roarCardSchema.parse(await getJson(`${base}/roar/card`, options))),
          // The version header: an a2a-js 1.0 server with its 0.3 layer on refuses a card request without it.
          optional(async () =>
            a2aCardSchema.parse(
              await getJson(`${base}/.well-known/agent-card.json`, {
                ...options,
                headers: { accept: 'application/json', 'a2a-version': '1.0' },
              }),
            ),
          ),
          optional(async () => oapInfoSchema.parse(await getJson(`${base}/`, options))),
        ])
      : [undefined, undefined, undefined];
  // A ROAR card counts only with the DID messages are addressed to.
  const roar = card?.identity !== undefined ? card : undefined;
  // ROAR's own router serves no card, only `/roar/health`: read last, and only when nothing else answered, so the
  // agents of the other kinds cost no more requests than before.
  const unread = listing === undefined && roar === undefined && a2a === undefined && oap === undefined;
  const cardless =
    unread &&
    (await optional(async () => isRoarHealth(objectOf(await getJson(`${base}/roar/health`, options))))) === true;
  if (unread && !cardless) {
    throw new AgoraError(
      'SOURCE_FAILED',
      `${base} answers none of /wellknown (Agora), /roar/card or /roar/health (ROAR), /.well-known/agent-card.json (A2A) and GET / (OAP): ${wellknownError instanceof Error ? wellknownError.message : String(wellknownError)}`,
    );
  }
  const documents: ProtocolDocument[] = [];
  const problems: string[] = [];
  for (const [rawHash, sources] of Object.entries(listing ?? {}).slice(0, maxProtocols)) {
    const hash = normalizeHash(rawHash);
    if (hash === undefined) {
      problems.push(`${rawHash.slice(0, 60)} is not a protocol hash`);
      continue;
    }
    const held = await known(hash);
    if (held !== undefined) {
      documents.push(held);
      continue;
    }
    const { document, problem } = await readDocument(base, hash, sources, options);
    if (document) documents.push(document);
    else if (problem) problems.push(problem);
  }
  const name = card?.identity?.display_name || card?.display_name || card?.name || a2a?.name || oap?.agent_id;
  const description = card?.description || a2a?.description || oap?.description;
  const kind: AgentReading['kind'] =
    listing !== undefined ? 'agora' : roar !== undefined || cardless ? 'roar' : a2a !== undefined ? 'a2a' : 'oap';
  return {
    kind,
    ...(name ? { name } : {}),
    ...(description ? { description } : {}),
    // An Agora agent's faces describe its protocols, listed already: only a ROAR or A2A agent's card adds capabilities.
    capabilities: [
      ...new Set([
        ...(kind === 'roar' && card ? roarCapabilities(card) : (card?.capabilities ?? [])),
        ...(kind === 'a2a' && a2a ? a2aCapabilities(a2a) : []),
        ...(oap?.capabilities ?? []),
      ]),
    ],
    documents,
    problems,
  };
}
