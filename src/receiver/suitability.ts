import { describeError } from '../errors.js';
import { judgeSuitability, type ResponderCall } from '../llm/peer-answers.js';
import type { Logger } from '../log.js';
import type { AgentMemory } from '../memory/file.js';
import type { ProtocolDocument } from '../protocol/document.js';

const PREFIX = 'suitability/';

/** The memory key of a hash's suitability verdict (`agora protocols reset <hash>` deletes it). */
export function suitabilityKey(hash: string): string {
  return `${PREFIX}${hash}`;
}

/**
 * Whether a learned protocol document suits this agent (spec §4): the LLM's verdict, judged once per hash even
 * under concurrent queries, remembered in memory so every process sharing it agrees. A "no" is read again from
 * memory each time, so a verdict forgotten there (`agora protocols reset`) is judged afresh without a restart.
 */
export class Suitability {
  readonly #verdicts = new Map<string, boolean>();
  readonly #judging = new Map<string, Promise<boolean>>();

  constructor(
    private readonly memory: AgentMemory,
    private readonly logger: Logger,
  ) {}

  /** The verdict already known for a hash, if any. */
  known(hash: string): boolean | undefined {
    return this.#verdicts.get(hash);
  }

  /** Forgets the verdict on a hash, here and in memory: the next query under it is judged again. */
  async forget(hash: string): Promise<boolean> {
    const known = this.#verdicts.delete(hash) || (await this.memory.get(suitabilityKey(hash))) !== undefined;
    await this.memory.delete(suitabilityKey(hash));
    return known;
  }

  /** Reads verdicts judged before (or by other processes sharing the memory). */
  async load(): Promise<void> {
    for (const key of await this.memory.keys(PREFIX)) {
      if (this.#verdicts.has(key.slice(PREFIX.length))) continue;
      const verdict = await this.memory.get<{ suitable: boolean }>(key);
      if (verdict && typeof verdict.suitable === 'boolean')
        this.#verdicts.set(key.slice(PREFIX.length), verdict.suitable);
    }
  }

  /** The verdict for a document, asking the LLM through `call()` when nobody judged it yet. */
  async judge(document: ProtocolDocument, call: () => ResponderCall): Promise<boolean> {
    const hash = document.hash;
    const cached = this.#verdicts.get(hash);
    if (cached === true) return true;
    const shared = await this.memory.get<{ suitable: boolean }>(`${PREFIX}${hash}`);
    if (shared && typeof shared.suitable === 'boolean') {
      this.#verdicts.set(hash, shared.suitable);
      return shared.suitable;
    }
    if (cached === false)
      this.logger.info(
        `protocol "${document.metadata.name}" ${hash}: its "unsuitable" verdict was forgotten: judging it again`,
      );
    this.#verdicts.delete(hash);
    let pending = this.#judging.get(hash);
    if (!pending) {
      pending = (async () => {
        const verdict = await judgeSuitability(call(), document).catch((error: unknown) => {
          // Answered to the peer as a bare "LLM unavailable": the cause is said here, once.
          this.logger.error(
            `protocol "${document.metadata.name}" ${hash}: suitability not judged: ${describeError(error)}${error instanceof Error && error.cause ? ` (cause: ${describeError(error.cause)})` : ''}`,
          );
          throw error;
        });
        this.#verdicts.set(hash, verdict.suitable);
        await this.memory.set(`${PREFIX}${hash}`, {
          suitable: verdict.suitable,
          reason: verdict.reason,
          judgedAt: new Date().toISOString(),
        });
        this.logger.info(
          `protocol "${document.metadata.name}" ${hash} judged ${verdict.suitable ? 'suitable' : `unsuitable (forget it with: agora protocols reset ${hash})`}`,
        );
        return verdict.suitable;
      })().finally(() => this.#judging.delete(hash));
      this.#judging.set(hash, pending);
    }
    return pending;
  }
}
