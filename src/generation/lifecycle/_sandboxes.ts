// The sandboxes of a book's approved routines (./book.ts), one per prefix, built from the routine's file on first use
// and rebuilt when its status or file changes (the status entry's stamp).
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { bundleForQuickJS } from '../sandbox/quickjs-bundle.js';
import { QuickJSSandbox, type SandboxOptions } from '../sandbox/quickjs.js';
import type { StatusEntry } from './status-cache.js';

type Loaded = { stamp: string; module: Promise<QuickJSSandbox>; ready?: QuickJSSandbox };

/** Approved routines' sandboxes by prefix; `dir` is the agent folder their files are relative to. */
export class RoutineSandboxes {
  readonly #dir: string;
  readonly #options: SandboxOptions;
  readonly #loaded = new Map<string, Loaded>();

  constructor(dir: string, options: SandboxOptions) {
    this.#dir = dir;
    this.#options = options;
  }

  /** The built sandbox for a fresh status entry of an approved routine, when it was built from that same stamp. */
  ready(prefix: string, entry: StatusEntry): QuickJSSandbox | undefined {
    const loaded = this.#loaded.get(prefix);
    return loaded && loaded.stamp === entry.stamp && entry.status?.status === 'approved' ? loaded.ready : undefined;
  }

  /**
   * The sandbox for a status entry, built on first use; undefined (and any older sandbox retired) when it is not
   * approved.
   */
  module(prefix: string, entry: StatusEntry): Promise<QuickJSSandbox> | undefined {
    if (entry.status?.status !== 'approved' || !entry.status.file || entry.stamp === undefined) {
      this.retire(prefix);
      return undefined;
    }
    const current = this.#loaded.get(prefix);
    if (current && current.stamp === entry.stamp) return current.module;
    this.retire(prefix);
    const file = resolve(this.#dir, entry.status.file);
    const name = `agora routine ${entry.status.task ?? entry.status.protocol}`;
    const module = readFile(file, 'utf8')
      .then((code) => bundleForQuickJS(code))
      .then((bundle) => new QuickJSSandbox(bundle, { ...this.#options, name }));
    const loaded: Loaded = { stamp: entry.stamp, module };
    this.#loaded.set(prefix, loaded);
    module.then(
      (sandbox) => {
        loaded.ready = sandbox;
      },
      // A file that no longer builds is retried on the next status refresh, not cached as a failure forever.
      () => {
        if (this.#loaded.get(prefix) === loaded) this.#loaded.delete(prefix);
      },
    );
    return module;
  }

  /** Drops a prefix's sandbox, closing it once built. */
  retire(prefix: string): void {
    const loaded = this.#loaded.get(prefix);
    if (!loaded) return;
    this.#loaded.delete(prefix);
    loaded.module.then(
      (module) => module.close(),
      () => undefined,
    );
  }

  /** Drops every sandbox. */
  retireAll(): void {
    for (const prefix of [...this.#loaded.keys()]) this.retire(prefix);
  }
}
