// The sender's side of a negotiation over HTTP: a conversation under the `negotiation` hash, its turns driven by
// `negotiateProtocol`, the agreed PD remembered and written into `<dir>/protocols/`.
import { plural } from '../_plural.js';
import { AgoraError, describeError } from '../errors.js';
import type { LanguageModel, UsageSink } from '../llm/model.js';
import { negotiateProtocol, writeProtocolFile, type NegotiationMessage, type NegotiationTask } from '../negotiation.js';
import type { ProtocolDocument } from '../protocol/document.js';
import { jsonText } from '../schemas.js';
import { openConversation, type QueryParts } from './conversation.js';
import { NEGOTIATION } from './documents.js';
import type { ProtocolHub } from './hub.js';

/** The outcome of {@link Sender.negotiate}: the agreed PD and where it was written. */
export type SenderNegotiation = {
  document: ProtocolDocument;
  rounds: number;
  transcript: NegotiationMessage[];
  path?: string;
};

/** Options of one negotiation. */
export type PeerNegotiationOptions = {
  maxRounds?: number | undefined;
  onRound?: (round: number, proposal: string, answer: string) => void;
  signal?: AbortSignal | undefined;
  onUsage: UsageSink;
};

/** What a negotiation needs of the sender: its wire, its documents, its LLM, its folder and its round limit. */
export type NegotiationParts = QueryParts & {
  llm: LanguageModel | undefined;
  dir: string | undefined;
  maxNegotiationRounds: number | undefined;
  hub?: ProtocolHub | undefined;
};

/** Negotiates a PD for a task with the peer at `base` (spec §5); the conversation is closed whatever happens. */
export async function negotiateWithPeer(
  parts: NegotiationParts,
  base: string,
  task: NegotiationTask,
  options: PeerNegotiationOptions,
): Promise<SenderNegotiation> {
  if (!parts.llm) throw new AgoraError('LLM_UNAVAILABLE', 'Negotiating a protocol needs an LLM');
  const conversation = openConversation(parts.transport, base, async () => ({
    fields: NEGOTIATION,
    textBodies: false,
  }));
  const signal = options.signal;
  const maxRounds = options.maxRounds ?? parts.maxNegotiationRounds;
  let result;
  try {
    result = await negotiateProtocol({
      llm: parts.llm,
      task,
      send: async (message) => jsonText((await conversation.send(message, signal ? { signal } : {})).body),
      onUsage: options.onUsage,
      ...(maxRounds !== undefined ? { maxRounds } : {}),
      ...(options.onRound ? { onRound: options.onRound } : {}),
      ...(signal ? { signal } : {}),
    });
  } finally {
    await conversation
      .close()
      .catch((error: unknown) => parts.logger.warn(`closing the negotiation with ${base}: ${describeError(error)}`));
  }
  await parts.documents.remember(result.document);
  const path = parts.dir ? await writeProtocolFile(parts.dir, result.document) : undefined;
  parts.logger.info(
    `negotiated protocol "${result.document.metadata.name}" ${result.document.hash} with ${base} in ${plural(result.rounds, 'round')}`,
  );
  if (parts.hub) await publishToHub(parts.hub, result.document, parts.logger);
  return { ...result, ...(path ? { path } : {}) };
}

/** Publishes a negotiated PD to the hub so the next pair finds it; a hub that fails costs a warning, not the PD. */
async function publishToHub(
  hub: ProtocolHub,
  document: ProtocolDocument,
  logger: NegotiationParts['logger'],
): Promise<void> {
  try {
    await hub.publish(document.text);
    logger.info(`published protocol "${document.metadata.name}" ${document.hash} to the hub ${hub.url}`);
  } catch (error) {
    logger.warn(`publishing protocol ${document.hash} to the hub ${hub.url} failed: ${describeError(error)}`);
  }
}
