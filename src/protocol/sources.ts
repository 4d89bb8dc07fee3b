import { AgoraError, describeError } from '../errors.js';
import { decodeDataUri } from './data-uri.js';
import { hashText, normalizeHash, parseDocument, type ProtocolDocument } from './document.js';
import { describeSource, fetchSource, type SourceOptions } from './fetch.js';

export { isForbiddenAddress } from '../net/address.js';
export { decodeDataUri, encodeDataUri } from './data-uri.js';
export { fetchSource, type SourceOptions } from './fetch.js';

/** The largest protocol document accepted from a peer by default, from any source (`data:` included): 64 KiB. */
export const DEFAULT_MAX_DOCUMENT_BYTES = 64 * 1024;
/** Sources tried per query by default; the rest are ignored. */
export const DEFAULT_MAX_SOURCES = 5;
/** One deadline over all the sources of a query by default, in ms. */
export const DEFAULT_SOURCES_DEADLINE_MS = 8000;

/**
 * Tries sources in order; returns the first document whose exact bytes hash to `expectedHash` (hex, already
 * normalized). Bounded: at most `maxSources` (5) tried, all under one deadline (`deadlineMs`, 8 s), each document at
 * most `maxBytes` (64 KiB), `data:` URIs included.
 * @example const document = await resolveSources(hash, request.protocolSources ?? [], { logger });
 */
export async function resolveSources(
  expectedHash: string,
  sources: readonly string[],
  options: SourceOptions = {},
): Promise<ProtocolDocument | undefined> {
  const logger = options.logger ?? console;
  // Callers normally pass hex already; normalizing again costs nothing and makes a base64 hash work too.
  const wanted = normalizeHash(expectedHash);
  if (wanted === undefined) {
    logger.warn(`Protocol sources ignored: ${describeSource(expectedHash)} is not a protocol hash`);
    return undefined;
  }
  const maxSources = options.maxSources ?? DEFAULT_MAX_SOURCES;
  if (sources.length > maxSources)
    logger.warn(`Protocol sources: ${sources.length} given, only the first ${maxSources} tried`);
  const deadlineMs = options.deadlineMs ?? DEFAULT_SOURCES_DEADLINE_MS;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), deadlineMs);
  const onOuter = () => deadline.abort();
  if (options.signal?.aborted) deadline.abort();
  else options.signal?.addEventListener('abort', onOuter, { once: true });
  const settings: SourceOptions = {
    ...options,
    maxBytes: options.maxBytes ?? DEFAULT_MAX_DOCUMENT_BYTES,
    signal: deadline.signal,
  };
  try {
    for (const rawSource of sources.slice(0, maxSources)) {
      if (deadline.signal.aborted) {
        logger.warn(`Protocol sources: the ${deadlineMs} ms deadline passed, the remaining sources were not tried`);
        return undefined;
      }
      const document = await trySource(wanted, rawSource.trim(), settings, logger);
      if (document !== 'next') return document;
    }
    return undefined;
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onOuter);
  }
}

/** One source: its document, `undefined` to stop (its bytes are no valid document), or `'next'`. */
async function trySource(
  wanted: string,
  source: string,
  options: SourceOptions,
  logger: { warn(message: string): void },
): Promise<ProtocolDocument | undefined | 'next'> {
  const name = describeSource(source);
  const bytes = await readSource(source, name, options, logger);
  if (bytes === undefined) return 'next';
  const hash = hashText(bytes);
  if (hash !== wanted) {
    logger.warn(`Protocol source skipped: ${name} hashes to ${hash}, not ${wanted}`);
    return 'next';
  }
  try {
    return parseDocument(bytes, name);
  } catch (error) {
    // Every other source with this hash holds these same bytes, so it would fail the same way: stop here.
    logger.warn(`Protocol source skipped: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
}

async function readSource(
  source: string,
  name: string,
  options: SourceOptions,
  logger: { warn(message: string): void },
): Promise<Buffer | undefined> {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(source)?.[1]?.toLowerCase();
  if (scheme === 'data') {
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_DOCUMENT_BYTES;
    // Percent-encoding triples a byte at most: a longer URI cannot decode within the cap, so it is not decoded.
    if (source.length > maxBytes * 3 + 256) {
      logger.warn(`Protocol source skipped: ${name} is larger than ${maxBytes} bytes`);
      return undefined;
    }
    const bytes = decodeDataUri(source);
    if (bytes !== undefined && bytes.length > maxBytes) {
      logger.warn(`Protocol source skipped: ${name} is larger than ${maxBytes} bytes`);
      return undefined;
    }
    if (bytes === undefined)
      logger.warn(`Protocol source skipped: ${name} is not a text/plain or text/markdown data: URI`);
    return bytes;
  }
  if (scheme === 'http' || scheme === 'https') {
    try {
      return await fetchSource(source, options);
    } catch (error) {
      logger.warn(`Protocol source skipped: ${error instanceof AgoraError ? error.message : describeError(error)}`);
      return undefined;
    }
  }
  // `file:`, `ftp:` and the like would let a peer read the receiver's own disk or network.
  logger.warn(`Protocol source skipped: ${name} has an unsupported scheme (expected http, https or data)`);
  return undefined;
}
