// The hub's part in a typed task's look for a fitting protocol: documents the hub finds for the task's name and
// description, fetched and verified by hash, judged like any other candidate. A hub that is down or slow costs a
// warning and a bounded wait, then the look goes on without it for a while.
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import { normalizeHash, parseDocument, type ProtocolDocument } from '../protocol/document.js';
import type { SenderDocuments } from './documents.js';
import type { ProtocolHub } from './hub.js';

/** Documents asked of the hub per look (each is judged by the LLM once, then remembered). */
const MAX_HUB_CANDIDATES = 3;
/** After a failure the hub is left alone this long, so a dead hub does not slow every task call. */
const HUB_BACKOFF_MS = 30_000;

/** When a sender may ask its hub again after a failure (Unix ms); one per sender. */
export type HubBackoff = { until: number };

/**
 * Up to three documents the hub lists for a task (its name and description as the search), skipping those
 * `skip` says are known or judged unfit; [] with a warning when the hub fails.
 */
export async function hubCandidates(
  hub: ProtocolHub,
  documents: SenderDocuments,
  task: { name: string; description: string },
  skip: (hash: string) => boolean,
  logger: Logger,
  backoff: HubBackoff,
  now: () => number = Date.now,
): Promise<ProtocolDocument[]> {
  if (backoff.until > now()) return [];
  try {
    const listed = await hub.protocols(
      `${task.name.replace(/[_-]+/g, ' ')} ${task.description}`,
      MAX_HUB_CANDIDATES * 2,
    );
    const hashes = listed
      .map((entry) => normalizeHash(entry.hash))
      .filter((hash): hash is string => hash !== undefined && !skip(hash));
    const found = await Promise.all(
      hashes.slice(0, MAX_HUB_CANDIDATES).map((hash) => fetchOne(hub, documents, hash, logger)),
    );
    backoff.until = 0;
    return found.filter((document): document is ProtocolDocument => document !== undefined);
  } catch (error) {
    backoff.until = now() + HUB_BACKOFF_MS;
    logger.warn(
      `the hub ${hub.url} failed, looking for a protocol without it for ${HUB_BACKOFF_MS / 1000} s: ${describeError(error)}`,
    );
    return [];
  }
}

/** One listed document: held already, else fetched from the hub and verified; a bad one is skipped with a warning. */
async function fetchOne(
  hub: ProtocolHub,
  documents: SenderDocuments,
  hash: string,
  logger: Logger,
): Promise<ProtocolDocument | undefined> {
  const known = await documents.remembered(hash);
  if (known) return known;
  try {
    // protocolText checks the SHA1: a hub serving another text under the hash is refused.
    const text = await hub.protocolText(hash);
    if (text === undefined) return undefined;
    const document = parseDocument(text, `${hub.url}/protocols/${hash}`);
    await documents.remember(document);
    return document;
  } catch (error) {
    logger.warn(`protocol ${hash} from the hub ${hub.url} skipped: ${describeError(error)}`);
    return undefined;
  }
}
