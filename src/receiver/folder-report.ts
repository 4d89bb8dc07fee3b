// What an agent folder serves and what it does not, said once per change: a protocol of `protocols/` left out of
// /wellknown (no routine, no LLM) and a routine of `routines/` whose name matches no protocol.
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ProtocolRegistry } from '../protocol/registry.js';
import type { AgentFolder } from './folder.js';

/** What {@link FolderReport} reads: the folder, its documents, the listing and whether an LLM answers. */
export type FolderReportParts = {
  registry: ProtocolRegistry;
  folder: AgentFolder;
  logger: Logger;
  /** The hashes `/wellknown` lists now. */
  listed(): Promise<ReadonlySet<string>>;
  hasLlm: boolean;
};

/**
 * Logs, after the first load and at each change of `protocols/` or `routines/`, each protocol newly left out of
 * `/wellknown` and why, and (from the first load on) each routine whose name matches no protocol. What the start
 * serves is `agora serve`'s banner; what stays as it was is not said again.
 */
export class FolderReport {
  readonly #parts: FolderReportParts;
  #unserved: Set<string> | undefined;
  #orphans = new Set<string>();
  #running: Promise<void> = Promise.resolve();
  readonly #stops: (() => void)[] = [];
  #closed = false;

  constructor(parts: FolderReportParts) {
    this.#parts = parts;
  }

  /** Takes the state after the first load (orphan routines are warned of), then follows the changes. */
  async start(): Promise<void> {
    if (this.#closed) return;
    this.#running = this.#run();
    await this.#running;
    if (this.#closed) return;
    const changed = () => {
      this.#running = this.#running.then(() => this.#run());
    };
    this.#stops.push(this.#parts.registry.onLocalChange(changed), this.#parts.folder.onRoutinesChanged(changed));
  }

  /** Resolves once the reports of the changes seen so far are logged. */
  settled(): Promise<void> {
    return this.#running;
  }

  /** Stops following. */
  close(): void {
    this.#closed = true;
    for (const stop of this.#stops.splice(0)) stop();
  }

  async #run(): Promise<void> {
    const { registry, folder, logger, hasLlm } = this.#parts;
    try {
      const local = registry.local();
      const names = new Set(local.map(({ name }) => name));
      const orphans = new Set([...folder.routines.keys()].filter((name) => !names.has(name)));
      for (const name of orphans)
        if (!this.#orphans.has(name))
          logger.warn(
            `routine ${name} (${folder.routines.get(name)?.file}) matches no protocol: a routine answers the document of its own name, protocols/${name}.md, and there is none`,
          );
      this.#orphans = orphans;
      const listed = await this.#parts.listed();
      const unserved = new Set(local.filter(({ document }) => !listed.has(document.hash)).map(({ name }) => name));
      if (this.#unserved)
        for (const name of unserved)
          if (!this.#unserved.has(name))
            logger.warn(
              `protocol ${name}.md not served (left out of /wellknown): ${hasLlm ? 'its routine does not answer it' : `no routines/${name}.ts and no LLM; add the routine, or serve with an LLM`}`,
            );
      this.#unserved = unserved;
    } catch (error) {
      logger.warn(`could not tell what the folder serves: ${describeError(error)}`);
    }
  }
}
