// Internal: the type-checks of an agent folder's hand-written routines and tools, run in the background as files load.
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';

/**
 * Type-checks hand-written files of an agent folder: their errors, one line each naming the file (by its path under
 * `root`) and line, as `routines/x.ts:3:5: error TS2322: …`.
 */
export type SourceTypeCheck = (files: readonly string[], root: string) => Promise<{ errors: string[] }>;

type Loaded = { file: string; digest: string };

/**
 * The type-checks of the files a load took in or changed, one after the other, each error a warning naming the file
 * and line. The file is served all the same, as loaded: its types are erased when it runs and its zod schemas still
 * check what goes in and out, so a type error may be harmless, and refusing it would take a protocol down on a save.
 */
export class SourceChecks {
  readonly #check: SourceTypeCheck | undefined;
  readonly #root: string;
  readonly #logger: Logger;
  #last: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(check: SourceTypeCheck | undefined, root: string, logger: Logger) {
    this.#check = check;
    this.#root = root;
    this.#logger = logger;
  }

  /** Checks the files of `after` new or changed since `before` (by digest), once the checks under way are done. */
  check(kind: 'routine' | 'tool', before: Iterable<Loaded>, after: Iterable<Loaded>): void {
    const check = this.#check;
    if (!check || this.#closed) return;
    const digests = new Map<string, string>();
    for (const loaded of before) digests.set(loaded.file, loaded.digest);
    const files = [...after].filter((loaded) => digests.get(loaded.file) !== loaded.digest).map(({ file }) => file);
    if (!files.length) return;
    const logger = this.#logger;
    this.#last = this.#last.then(() =>
      check(files, this.#root).then(
        ({ errors }) => {
          for (const error of errors)
            logger.warn(`type error in a ${kind}, served as loaded (fix it; agora validate lists these): ${error}`);
        },
        (error: unknown) => {
          if (!this.#closed) logger.warn(`${kind}s not type-checked: ${describeError(error)}`);
        },
      ),
    );
  }

  /** Starts no more checks, and says nothing of one the closing checker gives up. */
  close(): void {
    this.#closed = true;
  }

  /** Resolves once the checks started so far are done (their warnings logged). */
  done(): Promise<void> {
    return this.#last;
  }
}
