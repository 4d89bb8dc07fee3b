import { AgoraError, describeError } from '../errors.js';
import { decodeDataUri } from './data-uri.js';
import { hashText, normalizeHash, parseDocument, type ProtocolDocument } from './document.js';
import { describeSource, fetchSource, type SourceOptions } from './fetch.js';

export { isForbiddenAddress } from './address.js';
export { decodeDataUri, encodeDataUri } from './data-uri.js';
export { fetchSource, type SourceOptions } from './fetch.js';

/**
 * Tries sources in order; returns the first document whose exact bytes hash to `expectedHash` (hex, already normalized).
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
  for (const rawSource of sources) {
    const source = rawSource.trim();
    const name = describeSource(source);
    const bytes = await readSource(source, name, options, logger);
    if (bytes === undefined) continue;
    const hash = hashText(bytes);
    if (hash !== wanted) {
      logger.warn(`Protocol source skipped: ${name} hashes to ${hash}, not ${wanted}`);
      continue;
    }
    try {
      return parseDocument(bytes, name);
    } catch (error) {
      // Every other source with this hash holds these same bytes, so it would fail the same way: stop here.
      logger.warn(`Protocol source skipped: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    }
  }
  return undefined;
}

async function readSource(
  source: string,
  name: string,
  options: SourceOptions,
  logger: { warn(message: string): void },
): Promise<Buffer | undefined> {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(source)?.[1]?.toLowerCase();
  if (scheme === 'data') {
    const bytes = decodeDataUri(source);
    if (bytes === undefined) logger.warn(`Protocol source skipped: ${name} is not a text/plain or text/markdown data: URI`);
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

