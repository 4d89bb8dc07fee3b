import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { folderSignature, touchesSources, watchFolder } from '../_files.js';
import { KeyedQueue } from '../_queue.js';
import { AgoraError, describeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { KnownDocument } from '../protocol/registry.js';
import { loadRoutineFolder, type LoadedRoutine } from '../routine/load.js';
import { toolFunction, type Tool, type ToolContext } from '../tool/define.js';
import { loadToolFolder, type LoadedTool } from '../tool/load.js';
import { loadMcpTools, type McpServerStatus, type McpTools } from '../tool/mcp/index.js';
import { SourceChecks, type SourceTypeCheck } from './_source-checks.js';
import type { SignalSource } from './types.js';

export type { SourceTypeCheck } from './_source-checks.js';

/** The tools a routine is handed, by name. */
export type Toolbox = Record<string, (input: unknown) => Promise<unknown>>;

/** Options of {@link AgentFolder}. */
export type AgentFolderOptions = {
  dir: string;
  logger: Logger;
  name?: string | undefined;
  description?: string | undefined;
  /** Tools in addition to those in `tools/`. */
  tools?: Tool[] | undefined;
  /** Looks at `routines/` and `tools/` again this often (ms), reloading one whose signature changed (default: never). */
  rescanMs?: number | undefined;
  /** Type-checks hand-written files as they load, in the background (see {@link SourceTypeCheck}; default: none). */
  typeCheck?: SourceTypeCheck | undefined;
};

/** A tool context whose signal is made when the tool first reads it (a class: a frozen literal with a getter cost 3×). */
class SignalWhenNeeded implements ToolContext {
  readonly #make: () => AbortSignal;
  constructor(make: () => AbortSignal) {
    this.#make = make;
  }
  get signal(): AbortSignal {
    return this.#make();
  }
}

/**
 * What an agent folder holds besides its protocols: its name and description (package.json), its routines
 * (`routines/`) and tools (`tools/`), reloaded one at a time when they change.
 */
export class AgentFolder {
  readonly dir: string;
  #name: string;
  #description: string;
  readonly #options: AgentFolderOptions;
  readonly #logger: Logger;
  #routines = new Map<string, LoadedRoutine>();
  #routinesVersion = 0;
  #toolFiles = new Map<string, LoadedTool>();
  #loaded = { routines: false, tools: false };
  readonly #typeChecks: SourceChecks;
  readonly #routineListeners = new Set<() => void>();
  #tools: Tool[] = [];
  #mcp: McpTools | undefined;
  #toolboxCache: Toolbox | undefined;
  readonly #loggers = new Map<string, Logger>();
  // One key: a reload of routines and one of tools never overlap (they share the build cache).
  readonly #reloads = new KeyedQueue<'reload'>();
  #lastReload: Promise<void> = Promise.resolve();
  readonly #closers: (() => void)[] = [];
  /** The signatures of `routines/` and `tools/` as last loaded (see folderSignature). */
  readonly #signatures = { routines: '', tools: '' };

  constructor(options: AgentFolderOptions) {
    this.#options = options;
    this.dir = options.dir;
    this.#logger = options.logger;
    this.#name = options.name ?? basename(this.dir);
    this.#description = options.description ?? '';
    this.#typeChecks = new SourceChecks(options.typeCheck, options.dir, options.logger);
  }

  /** The `.agora/cache` folder where TypeScript modules are built for import. */
  get cacheDir(): string {
    return join(this.dir, '.agora', 'cache');
  }

  /** The agent's name. */
  get name(): string {
    return this.#name;
  }

  /** The agent's description. */
  get description(): string {
    return this.#description;
  }

  /** The routines loaded from `routines/`, by name. */
  get routines(): ReadonlyMap<string, LoadedRoutine> {
    return this.#routines;
  }

  /** A number that changes whenever `routines/` is reloaded (answers built once per change read it). */
  get routinesVersion(): number {
    return this.#routinesVersion;
  }

  /** The agent's tools (from `tools/` and the options). */
  get tools(): readonly Tool[] {
    return this.#tools;
  }

  /** How the MCP servers of `mcp.json` are doing (none without the file). */
  mcpServers(): McpServerStatus[] {
    return this.#mcp?.status() ?? [];
  }

  /** Reads the profile, routines and tools; with `watch`, reloads routines and tools when they change. */
  async load(watch: boolean): Promise<void> {
    await this.#readProfile();
    this.#mcp = await loadMcpTools(this.dir, this.#logger).catch((error: unknown) => {
      // A broken mcp.json is reported, never fatal: the agent serves without those tools.
      this.#logger.error(`mcp.json not loaded: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    });
    await Promise.all([this.#loadRoutines(), this.#loadTools()]);
    if (watch) {
      // An editor's swap or backup file changes nothing: only source files reload (each unchanged one is kept by
      // digest).
      this.#closers.push(
        watchFolder(join(this.dir, 'routines'), (names) => void (touchesSources(names) && this.reloadRoutines())),
      );
      this.#closers.push(
        watchFolder(
          join(this.dir, 'tools'),
          (names) => void (touchesSources(names) && this.#queueReload(() => this.#loadTools())),
        ),
      );
    }
    const rescanMs = this.#options.rescanMs ?? 0;
    if (rescanMs > 0) {
      // The safety net for a lost watch event: a listing and a stat per file, and a reload only when they differ.
      const rescan = () =>
        this.#rescan().catch((error: unknown) =>
          this.#logger.warn(`rescan of routines/ and tools/ failed: ${describeError(error)}`),
        );
      const timer = setInterval(() => void rescan(), Math.min(rescanMs, 2 ** 31 - 1));
      timer.unref?.();
      this.#closers.push(() => clearInterval(timer));
    }
  }

  /** Reloads `routines/` or `tools/` when its signature moved since it was last loaded. */
  async #rescan(): Promise<void> {
    const [routines, tools] = await Promise.all([
      folderSignature(join(this.dir, 'routines')),
      folderSignature(join(this.dir, 'tools')),
    ]);
    if (routines !== this.#signatures.routines) await this.reloadRoutines();
    if (tools !== this.#signatures.tools) await this.#queueReload(() => this.#loadTools());
  }

  async #readProfile(): Promise<void> {
    if (this.#options.name && this.#options.description !== undefined) return;
    try {
      const manifest = JSON.parse(await readFile(join(this.dir, 'package.json'), 'utf8')) as {
        name?: unknown;
        description?: unknown;
        agora?: { name?: unknown; description?: unknown };
      };
      const name = manifest.agora?.name ?? manifest.name;
      const description = manifest.agora?.description ?? manifest.description;
      if (!this.#options.name && typeof name === 'string') this.#name = name;
      if (this.#options.description === undefined && typeof description === 'string') this.#description = description;
    } catch {
      // A bare folder: the folder name will do.
    }
  }

  #queueReload(work: () => Promise<void>): Promise<void> {
    this.#lastReload = this.#reloads.run('reload', work);
    return this.#lastReload;
  }

  /** Calls `listener` after each load of `routines/`; returns how to stop. */
  onRoutinesChanged(listener: () => void): () => void {
    this.#routineListeners.add(listener);
    return () => this.#routineListeners.delete(listener);
  }

  /** Re-reads `routines/` (the watcher calls it). */
  reloadRoutines(): Promise<void> {
    return this.#queueReload(() => this.#loadRoutines());
  }

  /** With rescans, a load signs its folder first, so a change made while it runs shows at the next rescan. */
  async #sign(folder: 'routines' | 'tools'): Promise<void> {
    if ((this.#options.rescanMs ?? 0) > 0) this.#signatures[folder] = await folderSignature(join(this.dir, folder));
  }

  async #loadRoutines(): Promise<void> {
    await this.#sign('routines');
    const before = this.#routines;
    const previous = this.#loaded.routines ? before : undefined;
    this.#routines = await loadRoutineFolder(join(this.dir, 'routines'), this.cacheDir, this.#logger, previous);
    this.#loaded.routines = true;
    this.#routinesVersion += 1;
    for (const listener of this.#routineListeners) listener();
    this.#typeChecks.check('routine', before.values(), this.#routines.values());
  }

  async #loadTools(): Promise<void> {
    await this.#sign('tools');
    const before = this.#toolFiles;
    const previous = this.#loaded.tools ? before : undefined;
    this.#toolFiles = await loadToolFolder(join(this.dir, 'tools'), this.cacheDir, this.#logger, previous);
    this.#loaded.tools = true;
    this.#composeTools();
    this.#typeChecks.check('tool', before.values(), this.#toolFiles.values());
  }

  /** Resolves once the type-checks of what was loaded so far are done (their warnings logged). */
  typeChecked(): Promise<void> {
    return this.#typeChecks.done();
  }

  #composeTools(): void {
    const byName = new Map<string, Tool>();
    for (const tool of [
      ...[...this.#toolFiles.values()].flatMap((loaded) => loaded.tools),
      ...(this.#mcp?.tools() ?? []),
      ...(this.#options.tools ?? []),
    ]) {
      if (byName.has(tool.name)) this.#logger.warn(`tool ${tool.name} defined twice: the last one wins`);
      byName.set(tool.name, tool);
    }
    this.#tools = [...byName.values()];
    this.#toolboxCache = undefined;
  }

  /**
   * Starts the MCP servers of `mcp.json` not started yet, and adds their tools (the LLM's paths call it before they
   * offer the tools). `undefined` when there is nothing to start, which is every time after the first.
   */
  toolsReady(): Promise<void> | undefined {
    return this.#mcp?.ready()?.then(() => this.#composeTools());
  }

  /** The routine file for a document, when one is in `routines/`. */
  routineFor(known: KnownDocument): LoadedRoutine | undefined {
    return known.name ? this.#routines.get(known.name) : undefined;
  }

  /**
   * The tools as a routine calls them; with a client signal, calls are aborted with it. The signal may be given as
   * the function that makes it (see RequestContext.signalWhenNeeded): then made only when a tool is called.
   */
  toolbox(signal?: SignalSource): Toolbox {
    const mcp = this.#mcp;
    const build = (context: ToolContext) => {
      const toolbox: Toolbox = {};
      for (const tool of this.#tools) toolbox[tool.name] = toolFunction(tool, context);
      Object.freeze(toolbox);
      // A tool of an MCP server not started yet (`<server>_…`): the server starts on the routine's first call to it.
      if (!mcp?.pending()) return toolbox;
      return new Proxy(toolbox, {
        get: (target, name) => {
          if (typeof name !== 'string' || name in target || !mcp.mayServe(name)) return Reflect.get(target, name);
          return async (input: unknown) => {
            const tool = await mcp.toolFor(name);
            this.#composeTools();
            if (!tool) throw new AgoraError('INVALID_ARGUMENT', `No tool ${name}`);
            return toolFunction(tool, context)(input);
          };
        },
      });
    };
    // The common case (no client signal) shares one frozen toolbox: nothing to allocate per query.
    if (!signal) return (this.#toolboxCache ??= build(Object.freeze({})));
    // One frozen context per toolbox, not one per call.
    if (typeof signal !== 'function') return build(Object.freeze({ signal }));
    return build(new SignalWhenNeeded(signal));
  }

  /** A logger prefixed with the routine's name, made once per name. */
  routineLogger(name: string): Logger {
    let logger = this.#loggers.get(name);
    if (!logger) {
      logger = prefixed(this.#logger, `routine ${name}`);
      this.#loggers.set(name, logger);
    }
    return logger;
  }

  /** Stops watching and waits for a reload under way. */
  async close(): Promise<void> {
    for (const close of this.#closers.splice(0)) close();
    this.#typeChecks.close();
    await this.#lastReload.catch(() => undefined);
    await this.#mcp?.close();
  }
}

function prefixed(logger: Logger, prefix: string): Logger {
  return {
    info: (message) => logger.info(`${prefix}: ${message}`),
    warn: (message) => logger.warn(`${prefix}: ${message}`),
    error: (message) => logger.error(`${prefix}: ${message}`),
  };
}
