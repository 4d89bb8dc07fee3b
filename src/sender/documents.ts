// What the sender knows of protocol documents: the hash encoding each peer reads, the peers' documents (fetched
// and checked against their hash), our own `protocols/`, and those remembered in memory.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { AgoraError, describeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { AgentMemory } from '../memory/file.js';
import {
  encodeHash,
  hashEncodingOf,
  hashText,
  parseDocument,
  type HashEncoding,
  type ProtocolDocument,
} from '../protocol/document.js';
import { encodeDataUri, resolveSources } from '../protocol/sources.js';
import { wellknownSchema, type JsonValue, type Wellknown } from '../schemas.js';
import type { PeerTransport } from './transport.js';

// A PD larger than the receivers' source cap is no PD.
const MAX_DOCUMENT_BYTES = 256 * 1024;

/** The protocol fields of a query: the hash in the encoding the peer reads, and where to fetch the document. */
export type ProtocolFields = { protocolHash: string | null; protocolSources: string[] };

/** A query's protocol fields, and whether its bodies travel as text (a Python-like peer under a protocol, spec §7). */
export type PeerFields = { fields: ProtocolFields; textBodies: boolean };

/** The protocol fields of a negotiation (spec §5). */
export const NEGOTIATION: ProtocolFields = { protocolHash: 'negotiation', protocolSources: [] };

const NATURAL_LANGUAGE: ProtocolFields = { protocolHash: null, protocolSources: [] };

/** Options of {@link SenderDocuments}. */
export type SenderDocumentsOptions = {
  transport: PeerTransport;
  memory: AgentMemory;
  logger: Logger;
  /** The agent folder whose `protocols/` holds our own documents. */
  dir?: string;
  /** This agent's own base URL when it runs a receiver: its `/protocols/:hash` URL is added to the sources. */
  publicUrl?: string;
};

function encodingOf(listing: Wellknown | undefined): HashEncoding {
  if (listing === undefined) return 'base64';
  const keys = Object.keys(listing);
  return keys.length > 0 && keys.every((key) => hashEncodingOf(key) === 'base64') ? 'base64' : 'hex';
}

/** The sender's documents: discovery of each peer's hash encoding, and PDs by hash from peers, files and memory. */
export class SenderDocuments {
  readonly #transport: PeerTransport;
  readonly #memory: AgentMemory;
  readonly #logger: Logger;
  readonly #dir: string | undefined;
  readonly #publicUrl: string | undefined;
  readonly #encodings = new Map<string, Promise<HashEncoding>>();
  /** Peers with no `/wellknown` (404): Python SDK 0.2.0 peers, whose receivers read protocol bodies as text. */
  readonly #pythonLike = new Set<string>();
  readonly #documents = new Map<string, ProtocolDocument>();

  constructor(options: SenderDocumentsOptions) {
    this.#transport = options.transport;
    this.#memory = options.memory;
    this.#logger = options.logger;
    this.#dir = options.dir;
    this.#publicUrl = options.publicUrl?.replace(/\/+$/, '');
  }

  /** `protocolHash` and `protocolSources` for a PD, the hash in the encoding the peer reads. */
  async protocolFields(
    base: string,
    protocol: ProtocolDocument | string | undefined,
    signal?: AbortSignal,
  ): Promise<ProtocolFields> {
    if (protocol === undefined) return NATURAL_LANGUAGE;
    const document = typeof protocol === 'string' ? parseDocument(protocol) : protocol;
    const encoding = await this.#encodingFor(base, signal);
    const sources = [encodeDataUri(document.text)];
    if (this.#publicUrl) sources.push(`${this.#publicUrl}/protocols/${document.hash}`);
    return { protocolHash: encodeHash(document.hash, encoding), protocolSources: sources };
  }

  /** The protocol fields for a PD, and whether the peer reads bodies as text: a Python-like peer under a protocol. */
  async peerFields(
    base: string,
    protocol: ProtocolDocument | string | undefined,
    signal?: AbortSignal,
  ): Promise<PeerFields> {
    const fields = await this.protocolFields(base, protocol, signal);
    // Known once discovery has run, which protocolFields does for every PD.
    return { fields, textBodies: fields.protocolHash !== null && this.#pythonLike.has(base) };
  }

  /** The hash encoding a peer reads: hex when its `/wellknown` is (or lists hex), base64 for a Python peer (404). */
  async #encodingFor(base: string, signal?: AbortSignal): Promise<HashEncoding> {
    let pending = this.#encodings.get(base);
    if (!pending) {
      pending = this.listing(base, signal).then(
        (listing) => encodingOf(listing),
        (error: unknown) => {
          // Unknown for now: hex is the standard's default, and the next query asks again.
          this.#encodings.delete(base);
          this.#logger.warn(`discovery of ${base}: ${describeError(error)}; sending hex hashes`);
          return 'hex' as const;
        },
      );
      this.#encodings.set(base, pending);
    }
    return pending;
  }

  /** `GET /wellknown`: the listing, or undefined when the peer has none (404). */
  async listing(base: string, signal?: AbortSignal): Promise<Wellknown | undefined> {
    const url = `${base}/wellknown`;
    const response = await this.#transport.exchange('GET', url, undefined, signal);
    if (response.status === 404) {
      this.#pythonLike.add(base);
      this.#encodings.set(base, Promise.resolve(encodingOf(undefined)));
      return undefined;
    }
    const json = this.#transport.parseJson('GET', url, response);
    if (response.status < 200 || response.status > 299)
      throw this.#transport.peerError('GET', url, response.status, json);
    const parsed = wellknownSchema.safeParse(json);
    if (!parsed.success)
      throw new AgoraError('PEER_FAILURE', `GET ${url}: not a /wellknown listing: ${z.prettifyError(parsed.error)}`, {
        status: response.status,
      });
    this.#pythonLike.delete(base);
    // Every read of the listing settles discovery too, so a task's look at it spares the query another GET.
    if (!this.#encodings.has(base)) this.#encodings.set(base, Promise.resolve(encodingOf(parsed.data)));
    return parsed.data;
  }

  /** The PDs in `<dir>/protocols/` (none without a folder); a file that does not parse is skipped with a warning. */
  async local(): Promise<ProtocolDocument[]> {
    if (!this.#dir) return [];
    const folder = join(this.#dir, 'protocols');
    let names: string[];
    try {
      names = (await readdir(folder)).filter((name) => name.endsWith('.md')).sort();
    } catch {
      return [];
    }
    const documents: ProtocolDocument[] = [];
    for (const name of names) {
      try {
        const document = parseDocument(await readFile(join(folder, name)), name);
        this.#documents.set(document.hash, document);
        documents.push(document);
      } catch (error) {
        this.#logger.warn(`protocols/${name} skipped: ${describeError(error)}`);
      }
    }
    return documents;
  }

  /** A PD by hex hash: held already, remembered, in `protocols/`, or served by the target. */
  async known(hash: string, base: string, signal?: AbortSignal): Promise<ProtocolDocument | undefined> {
    const remembered = await this.remembered(hash);
    if (remembered) return remembered;
    const local = (await this.local()).find((document) => document.hash === hash);
    return local ?? this.peer(base, hash, [], signal);
  }

  /** A PD by hex hash held already or remembered in memory (checked against its hash); nothing is fetched. */
  async remembered(hash: string): Promise<ProtocolDocument | undefined> {
    const held = this.#documents.get(hash);
    if (held) return held;
    const remembered = await this.#memory.get<{ text?: JsonValue }>(`sender/documents/${hash}`);
    if (remembered && typeof remembered.text === 'string' && hashText(remembered.text) === hash) {
      try {
        const document = parseDocument(remembered.text, `sender/documents/${hash}`);
        this.#documents.set(hash, document);
        return document;
      } catch {
        // Not a PD after all: as if unknown.
      }
    }
    return undefined;
  }

  /** Holds a PD and keeps its text in memory, so later calls find it without asking the peer. */
  async remember(document: ProtocolDocument): Promise<void> {
    this.#documents.set(document.hash, document);
    await this.#memory.set(`sender/documents/${document.hash}`, { text: document.text, name: document.metadata.name });
  }

  /**
   * Fetches a peer's PD and checks its hash: `data:` sources, then the peer's own URLs (its `/protocols/:hash` first);
   * sources on other hosts go through the receiver's guarded fetch (spec §3), so a peer cannot point us into our own
   * network.
   */
  async peer(
    base: string,
    hash: string,
    sources: readonly string[],
    signal?: AbortSignal,
  ): Promise<ProtocolDocument | undefined> {
    const held = this.#documents.get(hash);
    if (held) return held;
    const origin = new URL(base).origin;
    const own = [`${base}/protocols/${hash}`];
    const foreign: string[] = [];
    const inline: string[] = [];
    for (const source of sources) {
      if (/^data:/i.test(source)) {
        inline.push(source);
        continue;
      }
      let url: URL;
      try {
        url = source.startsWith('/') ? new URL(`${base}${source}`) : new URL(source);
      } catch {
        continue;
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') continue;
      if (url.origin === origin) {
        if (!own.includes(url.href)) own.push(url.href);
      } else foreign.push(url.href);
    }
    const logger = { warn: (message: string) => this.#logger.warn(`protocol ${hash} from ${base}: ${message}`) };
    const found = inline.length ? await resolveSources(hash, inline, { logger }) : undefined;
    if (found) return this.#keep(found);
    for (const url of own) {
      let bytes: Uint8Array | undefined;
      try {
        // The peer's own URLs go through our transport (its fetch and timeout): the peer may well be on loopback.
        bytes = await this.#transport.download(url, MAX_DOCUMENT_BYTES, signal);
      } catch (error) {
        logger.warn(describeError(error));
        continue;
      }
      if (!bytes || hashText(bytes) !== hash) continue;
      try {
        return await this.#keep(parseDocument(bytes, `${base} protocol ${hash}`));
      } catch (error) {
        this.#logger.warn(describeError(error));
        return undefined;
      }
    }
    const fetched = foreign.length
      ? await resolveSources(hash, foreign, { maxBytes: MAX_DOCUMENT_BYTES, logger })
      : undefined;
    return fetched ? this.#keep(fetched) : undefined;
  }

  async #keep(document: ProtocolDocument): Promise<ProtocolDocument> {
    await this.remember(document);
    return document;
  }
}
