// Reads what an agent says about itself: `/wellknown` and its documents (each verified by hash), and what each
// binding's probes read (its ROAR card, its A2A card, its OAP `GET /`…), the fallback ones (ROAR's card-less
// `/roar/health`, whose agent says nothing of itself: its name and capabilities come with its registration) only
// when nothing else answered; what it serves tells its kind (Agora, then the probes' order). Every read goes through
// the SSRF guard, size cap and time limit of protocol sources (src/protocol/sources.ts): the hub fetches URLs
// strangers give it.
import { z } from 'zod';
import { AgoraError, describeError } from '../errors.js';
import { hashText, normalizeHash, parseDocument, type ProtocolDocument } from '../protocol/document.js';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { decodeDataUri, fetchSource, isForbiddenAddress, type SourceOptions } from '../protocol/sources.js';
import type { Recognition } from '../bindings/binding.js';
import { PROBES, type PeerKind } from '../bindings/index.js';

/** How the hub reads agents: the source options (private networks, time, size), and caps. */
export type ReadOptions = Pick<SourceOptions, 'allowPrivateSources' | 'timeoutMs' | 'lookup' | 'headers'> & {
  /** Largest `/wellknown`, card or document accepted, in bytes (default 256 KiB). */
  maxBytes?: number;
  /** Protocols kept per agent (default 100); more are ignored. */
  maxProtocols?: number;
};

/** What an agent told the hub about itself. */
export type AgentReading = {
  kind: PeerKind;
  name?: string;
  description?: string;
  capabilities: string[];
  /** Documents read and verified (hash of the exact bytes = the hash listed). */
  documents: ProtocolDocument[];
  /** Listed hashes whose documents could not be had, or came under another hash: never trusted. */
  problems: string[];
};

const wellknownSchema = z.record(z.string(), z.array(z.string()));
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
 * Reads an agent at `base`: `/wellknown`, documents, then every binding's probes (the fallback ones last); throws
 * SOURCE_FAILED when the agent answers none of them. `known(hash)` gives documents the hub already holds, so they are
 * not fetched again.
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
  // Each probe of the bindings, read together; the fallback ones only when nothing else answered, so the agents
  // of the other kinds cost no more requests than before.
  const read = (probe: (typeof PROBES)[number]) =>
    optional(async () => {
      const json = await getJson(
        `${base}${probe.path}`,
        probe.headers ? { ...options, headers: probe.headers } : options,
      );
      const recognition = probe.read(json);
      return recognition && { ...recognition, kind: probe.kind };
    });
  const readings: (Recognition & { kind: PeerKind })[] =
    withProfile || listing === undefined
      ? (await Promise.all(PROBES.filter((probe) => !probe.fallback).map(read))).filter((reading) => !!reading)
      : [];
  if (listing === undefined && !readings.some((reading) => reading.speaks)) {
    for (const probe of PROBES.filter((probe) => probe.fallback)) {
      const reading = await read(probe);
      if (reading?.speaks) {
        readings.push(reading);
        break;
      }
    }
  }
  if (listing === undefined && !readings.some((reading) => reading.speaks)) {
    const probed = PROBES.map((probe) => `GET ${probe.path} (${probe.kind.toUpperCase()})`);
    const tried = ['GET /wellknown (Agora)', ...probed].join(', ');
    throw new AgoraError(
      'SOURCE_FAILED',
      `${base} answers none of ${tried}: ${wellknownError instanceof Error ? wellknownError.message : String(wellknownError)}`,
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
  const kind: PeerKind = listing !== undefined ? 'agora' : readings.find((reading) => reading.speaks)!.kind;
  const name = readings.find((reading) => reading.name)?.name;
  const description = readings.find((reading) => reading.description)?.description;
  return {
    kind,
    ...(name ? { name } : {}),
    ...(description ? { description } : {}),
    // An Agora agent's faces describe its protocols, listed already: only the capabilities of the agent's own kind
    // count, and those a card announces for any kind (OAP's `GET /`).
    capabilities: [
      ...new Set(
        readings.flatMap((reading) => (reading.kind === kind ? reading.capabilities : reading.announced) ?? []),
      ),
    ],
    documents,
    problems,
  };
}
