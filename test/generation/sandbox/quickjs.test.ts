import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../../../src/log.js';
import { bundleForQuickJS } from '../../../src/generation/sandbox/quickjs-bundle.js';
import { QuickJSSandbox, type SandboxContext, type SandboxOptions } from '../../../src/generation/sandbox/quickjs.js';
import { z } from 'zod';
import { defineTool, RUN_NOW, toolFunction } from '../../../src/tool/define.js';

const SECRET = 'agora-test-secret-7c1f0d';
const opened: QuickJSSandbox[] = [];

async function sandbox(handle: string, options: SandboxOptions & { prefix?: string } = {}): Promise<QuickJSSandbox> {
  const code = `import { z } from 'zod';\nimport { defineRoutine } from 'agora-agents';\n${options.prefix ?? ''}\nexport default defineRoutine({ handle: ${handle} });\n`;
  const module = new QuickJSSandbox(await bundleForQuickJS(code), { name: 'test routine', ...options });
  opened.push(module);
  return module;
}

function context(overrides: Partial<SandboxContext> = {}): SandboxContext {
  return {
    conversation: { id: 'c1', turn: 1, state: {} },
    protocol: { name: 'Test', hash: 'sha1-test', metadata: { name: 'Test' } as SandboxContext['protocol']['metadata'] },
    tools: {},
    logger: memoryLogger(),
    ...overrides,
  };
}

beforeAll(() => {
  process.env.AGORA_TEST_SECRET = SECRET;
});
afterAll(() => {
  delete process.env.AGORA_TEST_SECRET;
});
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(opened.splice(0).map((module) => module.close()));
});

describe('the escapes of issue 11, finding 1', () => {
  it('has no process, so process.report cannot read the environment', async () => {
    const module = await sandbox(`() => globalThis.process.report.getReport().environmentVariables`);
    const failure = await module.run('handle', {}, context()).catch((error: Error) => error);
    expect(failure).toBeInstanceOf(Error);
    expect(String((failure as Error).message)).toMatch(/TypeError/);
    expect(String((failure as Error).message)).not.toContain(SECRET);
  });

  it('cannot load node:child_process through import() hidden by a comment', async () => {
    const module = await sandbox(
      `async () => { const name = ['node', 'child_process'].join(':'); const m = await import/**/(name); return String(m.execSync('echo pwned')); }`,
    );
    await expect(module.run('handle', {}, context())).rejects.toThrow(/could not load module 'node:child_process'/);
  });

  it('cannot reach the host through indirect eval', async () => {
    const module = await sandbox(
      `async () => ({ process: (0, eval)('typeof process'), imported: await (0, eval)("imp" + "ort('node:fs')").then(() => 'loaded', (error) => String(error)) })`,
    );
    const result = await module.run('handle', {}, context());
    expect(result.value).toEqual({
      process: 'undefined',
      imported: expect.stringMatching(/could not load module 'node:fs'|no function filename for import\(\)/),
    });
  });

  it('cannot reach the host through Function or the AsyncFunction constructor', async () => {
    const module = await sandbox(
      `async () => [await Function('return imp' + 'ort("node:child_process")')().catch(String), await (async () => {}).constructor('return await imp' + 'ort("node:os")')().catch(String)]`,
    );
    const result = await module.run('handle', {}, context());
    expect(result.value).toEqual([
      expect.stringMatching(/could not load module/),
      expect.stringMatching(/could not load module/),
    ]);
  });

  it('finds only its own realm through constructor.constructor and globalThis', async () => {
    const module = await sandbox(`() => {
      const global = (() => {}).constructor.constructor('return this')();
      return { same: global === globalThis, names: Object.getOwnPropertyNames(global), host: typeof global.__agora_host,
        reached: ['process', 'require', 'module', 'Buffer', 'fetch', 'setTimeout', 'setInterval', 'queueMicrotask', 'WebAssembly', 'std', 'os', 'Deno', 'Bun'].filter((name) => typeof global[name] !== 'undefined') };
    }`);
    const result = (await module.run('handle', {}, context())).value as {
      same: boolean;
      names: string[];
      host: string;
      reached: string[];
    };
    expect(result.same).toBe(true);
    expect(result.host).toBe('undefined');
    expect(result.reached).toEqual([]);
    expect(result.names).not.toContain('__agora_host');
    expect(result.names).not.toContain('__agora_module');
  });

  it('does not see the host environment anywhere in its results or errors', async () => {
    const module = await sandbox(
      `() => JSON.stringify(Object.getOwnPropertyNames(globalThis).map((name) => { try { return String(globalThis[name]); } catch (error) { return String(error); } }))`,
    );
    const result = await module.run('handle', {}, context());
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });
});

describe('limits', () => {
  it('fails a call holding 1.5 GB of ArrayBuffers with a memory error, and serves the next call afresh', async () => {
    const module = await sandbox(
      `(body) => { if (!body.hog) return 'fine'; const held = []; for (let i = 0; i < 96; i++) held.push(new ArrayBuffer(16 * 1024 * 1024)); return held.length; }`,
    );
    await expect(module.run('handle', { hog: true }, context())).rejects.toThrow(/memory limit of 64 MB/);
    expect((await module.run('handle', {}, context())).value).toBe('fine');
  });

  it('fails typed arrays filled past the limit, and many small objects', async () => {
    const module = await sandbox(
      `(body) => { const held = []; if (body.typed) { for (let i = 0; i < 64; i++) held.push(new Uint8Array(4 * 1024 * 1024).fill(1)); } else { for (let i = 0; i < 1e7; i++) held.push({ i }); } return held.length; }`,
      { memoryLimitMb: 32, cpuLimitMs: 10_000, timeoutMs: 20_000 },
    );
    await expect(module.run('handle', { typed: true }, context())).rejects.toThrow(/memory limit of 32 MB/);
    await expect(module.run('handle', { typed: false }, context())).rejects.toThrow(/memory limit of 32 MB/);
  });

  it('fails an endless synchronous loop at its CPU time limit', async () => {
    const module = await sandbox(`(body) => { if (body.spin) { while (true) {} } return 'fine'; }`, { cpuLimitMs: 50 });
    await expect(module.run('handle', { spin: true }, context())).rejects.toThrow(/CPU time limit of 50 ms/);
    expect((await module.run('handle', {}, context())).value).toBe('fine');
  });

  it('charges CPU time, not wall-clock time: a call is not failed for time the machine gave to others', async () => {
    // A clock that never advances stands for a process descheduled all along: 5 million iterations, far past 1 ms
    // of wall-clock time on any machine, are not charged, and the call succeeds.
    const module = await sandbox(
      `(body) => { let sum = 0; for (let i = 0; i < body.n; i++) sum += i % 7; return sum; }`,
      { cpuLimitMs: 1, timeoutMs: 60_000, cpuClock: () => 0 },
    );
    expect((await module.run('handle', { n: 5_000_000 }, context())).value).toBe(14_999_995);
  });

  it('fails at the CPU limit by the CPU clock, whatever the speed of the machine', async () => {
    // Each reading of this clock is 10 ms of CPU time: the limit of 30 ms is reached at the fourth poll.
    let reading = 0;
    const module = await sandbox(`(body) => { if (body.spin) { while (true) {} } return 'fine'; }`, {
      cpuLimitMs: 30,
      cpuClock: () => (reading += 10),
    });
    await expect(module.run('handle', { spin: true }, context())).rejects.toThrow(/CPU time limit of 30 ms/);
    expect((await module.run('handle', {}, context())).value).toBe('fine');
  });

  it('stops guest code at the call time limit when the CPU clock says nothing was used (the wall-clock backstop)', async () => {
    const module = await sandbox(`(body) => { while (true) {} }`, {
      cpuLimitMs: 1000,
      timeoutMs: 100,
      cpuClock: () => 0,
    });
    await expect(module.run('handle', {}, context())).rejects.toThrow(/timed out after 100 ms of computation/);
  });

  it('counts the computation after a tool call against the same CPU limit', async () => {
    const module = await sandbox(`async (body, { tools }) => { await tools.echo(1); while (true) {} }`, {
      cpuLimitMs: 50,
    });
    await expect(module.run('handle', {}, context({ tools: { echo: async (input) => input } }))).rejects.toThrow(
      /CPU time limit/,
    );
  });

  it('fails a module whose top level never ends, at load', async () => {
    const module = await sandbox(`() => 1`, { prefix: 'while (true) {}', loadTimeoutMs: 50 });
    await expect(module.run('handle', {}, context())).rejects.toThrow(/failed to load.*CPU time limit/);
  });

  it('turns endless recursion into a failed call', async () => {
    const module = await sandbox(
      `(body) => { if (!body.deep) return 'fine'; const f = (n) => f(n + 1) + 1; return f(0); }`,
    );
    await expect(module.run('handle', { deep: true }, context())).rejects.toThrow(/RangeError|stack/i);
    expect((await module.run('handle', {}, context())).value).toBe('fine');
  });

  it('fails a call waiting on a tool past its time limit', async () => {
    const module = await sandbox(`async (body, { tools }) => body.wait ? tools.never({}) : 'fine'`, {
      timeoutMs: 2000,
    });
    await module.run('handle', {}, context());
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const call = module.run(
      'handle',
      { wait: true },
      context({ tools: { never: () => new Promise(() => undefined) } }),
    );
    const outcome = expect(call).rejects.toThrow(/timed out after 2000 ms/);
    await vi.advanceTimersByTimeAsync(2000);
    await outcome;
  });

  it('gives the next call a fresh context after an exception', async () => {
    const module = await sandbox(`(body) => { calls++; if (body.fail) throw new Error('boom'); return calls; }`, {
      prefix: 'let calls = 0;',
    });
    expect((await module.run('handle', {}, context())).value).toBe(1);
    expect((await module.run('handle', {}, context())).value).toBe(2);
    await expect(module.run('handle', { fail: true }, context())).rejects.toThrow(/boom/);
    expect((await module.run('handle', {}, context())).value).toBe(1);
  });
});

describe('the routine context', () => {
  it('starts the calls asked for in one turn of the event loop together, after it, in order', async () => {
    const module = await sandbox(`async (body, { tools }) => tools.echo(body.n)`);
    const events: string[] = [];
    const echo = defineTool({
      name: 'echo',
      description: 'echoes',
      input: z.number(),
      run: (n) => (events.push(`tool ${n}`), n),
    });
    const tools = { echo: toolFunction(echo) };
    await module.run('handle', { n: 0 }, context({ tools }));
    events.length = 0;
    const calls = [1, 2, 3].map((n) =>
      module.run('handle', { n }, context({ tools })).then((result) => events.push(`done ${String(result.value)}`)),
    );
    // Nothing has run by the end of this turn's own work, however many microtasks it takes...
    for (let tick = 0; tick < 50; tick++) await Promise.resolve();
    expect(events).toEqual([]);
    // ...and once the turn is over, every call ran, in the order asked, each caller told as its call ended.
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.all(calls);
    expect(events.filter((event) => event.startsWith('tool'))).toEqual(['tool 1', 'tool 2', 'tool 3']);
    expect(events.filter((event) => event.startsWith('done'))).toEqual(['done 1', 'done 2', 'done 3']);
  });

  it('calls the agent tools, their failures included', async () => {
    const module = await sandbox(
      `async ({ a, b }, { tools }) => ({ sum: (await tools.add({ a, b })).sum, refused: await tools.broken({}).catch((error) => error.message), missing: await Promise.resolve().then(() => tools.nope({})).catch((error) => error.message) })`,
    );
    const tools = {
      add: async (input: unknown) => ({ sum: (input as { a: number }).a + (input as { b: number }).b }),
      broken: async () => Promise.reject(new Error('tool down')),
    };
    const result = await module.run('handle', { a: 2, b: 3 }, context({ tools }));
    expect(result.value).toEqual({
      sum: 5,
      refused: 'tool down',
      missing: expect.stringMatching(/not a function|nope/),
    });
  });

  describe('a tool that answers at once (toolFunction)', () => {
    const add = defineTool({
      name: 'add',
      description: 'adds',
      input: z.object({ a: z.number(), b: z.number() }),
      run: ({ a, b }) => ({ sum: a + b }),
    });
    const broken = defineTool({
      name: 'broken',
      description: 'fails',
      input: z.object({}),
      run: () => {
        throw new Error('tool down');
      },
    });
    const odd = defineTool({ name: 'odd', description: 'not JSON', input: z.object({}), run: () => ({ big: 1n }) });

    it('is answered in the same call, without its promise: values, throws, invalid input and answers that are not JSON', async () => {
      const module = await sandbox(
        `async ({ a, b }, { tools }) => ({ sum: (await tools.add({ a, b })).sum, refused: await tools.broken({}).catch((error) => error.message), invalid: await tools.add({ a: 'x' }).catch((error) => error.message.slice(0, 24)), odd: await tools.odd({}).catch((error) => error.message.slice(0, 29)) })`,
      );
      const promised = vi.fn();
      const tools = Object.fromEntries(
        [add, broken, odd].map((tool) => {
          const fn = toolFunction(tool);
          return [tool.name, Object.assign((input: unknown) => (promised(), fn(input)), { [RUN_NOW]: fn[RUN_NOW] })];
        }),
      );
      const result = await module.run('handle', { a: 2, b: 3 }, context({ tools }));
      expect(result.value).toEqual({
        sum: 5,
        refused: 'tool down',
        invalid: 'Invalid input for tool a',
        odd: "the tool's answer is not JSON",
      });
      expect(promised).not.toHaveBeenCalled();
    });

    it('runs thousands of calls in a row without growing the stack, and sets no timer for them', async () => {
      const module = await sandbox(
        `async (body, { tools }) => { let sum = 0; for (let i = 0; i < 3000; i++) sum += (await tools.add({ a: i, b: 1 })).sum; const all = await Promise.all([1, 2, 3].map((a) => tools.add({ a, b: 0 }))); return { sum, all: all.map((x) => x.sum) }; }`,
      );
      const timers = vi.spyOn(globalThis, 'setTimeout');
      const result = await module.run('handle', {}, context({ tools: { add: toolFunction(add) } }));
      expect(result.value).toEqual({ sum: (2999 * 3000) / 2 + 3000, all: [1, 2, 3] });
      expect(timers.mock.calls.filter(([, ms]) => ms === 2000)).toHaveLength(0);
      timers.mockRestore();
    });

    it('still stops a routine that calls it forever, by its CPU time', async () => {
      const module = await sandbox(`async (body, { tools }) => { for (;;) await tools.add({ a: 1, b: 1 }); }`, {
        cpuLimitMs: 60,
        timeoutMs: 5000,
      });
      await expect(module.run('handle', {}, context({ tools: { add: toolFunction(add) } }))).rejects.toThrow(
        /CPU time limit|timed out/,
      );
      // The next call gets a fresh context and works.
      const again = await sandbox(`async (body, { tools }) => (await tools.add({ a: 1, b: 2 })).sum`);
      expect((await again.run('handle', {}, context({ tools: { add: toolFunction(add) } }))).value).toBe(3);
    });

    it('keeps an asynchronous run behind its promise', async () => {
      const slow = defineTool({
        name: 'slow',
        description: 'later',
        input: z.object({}),
        run: async () => ({ later: true }),
      });
      const module = await sandbox(`async (body, { tools }) => tools.slow({})`);
      expect((await module.run('handle', {}, context({ tools: { slow: toolFunction(slow) } }))).value).toEqual({
        later: true,
      });
    });
  });

  it('round-trips the conversation state and sees the protocol', async () => {
    const module = await sandbox(
      `(body, { conversation, protocol }) => { conversation.state.items = [...(conversation.state.items ?? []), body.item]; return { turn: conversation.turn, protocol: protocol.name }; }`,
    );
    const first = await module.run('handle', { item: 'tea' }, context());
    const second = await module.run(
      'handle',
      { item: 'milk' },
      context({ conversation: { id: 'c1', turn: 2, state: first.state ?? {} } }),
    );
    expect(first.value).toEqual({ turn: 1, protocol: 'Test' });
    expect(second.state).toEqual({ items: ['tea', 'milk'] });
  });

  it('reports the state of a conversation, and none for a single-round query (kept nowhere)', async () => {
    const module = await sandbox(`(body, { conversation }) => { conversation.state.seen = true; return 'ok'; }`);
    expect((await module.run('handle', {}, context())).state).toEqual({ seen: true });
    const single = await module.run('handle', {}, context({ conversation: { id: null, turn: 1, state: {} } }));
    expect(single).toEqual({ value: 'ok' });
  });

  it('reads and writes the guest memory after it grew mid-call', async () => {
    const module = await sandbox(
      `async (body, { tools }) => { const keep = []; for (let i = 0; i < 40; i++) keep.push(new Uint8Array(512 * 1024).fill(i)); const echoed = await tools.echo(body.text); return { echoed, kept: keep.length, last: keep[39][7] }; }`,
    );
    const text = 'é'.repeat(3000) + 'end';
    const tools = { echo: async (input: unknown) => input };
    const result = await module.run('handle', { text }, context({ tools }));
    expect(result.value).toEqual({ echoed: text, kept: 40, last: 39 });
    expect((await module.run('handle', { text: 'again' }, context({ tools }))).value).toMatchObject({
      echoed: 'again',
    });
  });

  it('passes log lines to the agent logger', async () => {
    const logger = memoryLogger();
    const module = await sandbox(`(body, { logger }) => { logger.warn('careful ' + body.n); return null; }`);
    await module.run('handle', { n: 7 }, context({ logger }));
    expect(logger.lines.join('\n')).toContain('careful 7');
  });

  it('caps the log lines and bytes of one call, and says once that it cut them', async () => {
    const logger = memoryLogger();
    const module = await sandbox(
      `(body, { logger }) => { for (let i = 0; i < 5000; i++) logger.info('line ' + i + ' ' + 'x'.repeat(1990)); return null; }`,
      { timeoutMs: 10_000, cpuLimitMs: 5000 },
    );
    await module.run('handle', {}, context({ logger }));
    expect(logger.lines.filter((line) => line.includes('line ')).length).toBeLessThanOrEqual(50);
    expect(logger.lines.join('\n').length).toBeLessThan(20 * 1024);
    expect(logger.lines.filter((line) => line.includes('log cut after')).length).toBe(1);
    // The next call has its own allowance.
    const again = memoryLogger();
    await module.run('handle', {}, context({ logger: again }));
    expect(again.lines.some((line) => line.includes('line 0 '))).toBe(true);
  });

  it('runs zod inside: input refused with issues, output checked', async () => {
    const code = `import { z } from 'zod';\nimport { defineRoutine } from 'agora-agents';\nexport default defineRoutine({ input: z.object({ n: z.number() }), output: z.object({ doubled: z.number() }), invalidInput: { error: 'Invalid format' }, handle: ({ n }) => n === 13 ? { doubled: 'unlucky' } : { doubled: n * 2 } });\n`;
    const module = new QuickJSSandbox(await bundleForQuickJS(code));
    opened.push(module);
    expect((await module.run('handle', { n: 21 }, context())).value).toEqual({ doubled: 42 });
    const refused = await module.run('handle', { n: 'x' }, context());
    expect(refused.invalid).toEqual({ issues: expect.stringContaining('n:'), reply: { error: 'Invalid format' } });
    await expect(module.run('handle', { n: 13 }, context())).rejects.toThrow(/output schema/);
    expect((await module.run('checkOutput', { doubled: 'no' })).value).toEqual(expect.stringContaining('doubled'));
    expect((await module.run('checkOutput', { doubled: 2 })).value).toBeNull();
  });

  it('parses with the schemas zod compiles, and with zod itself where it cannot compile them', async () => {
    // z.compile refuses a schema with a reference cycle: the tree keeps zod's own parse.
    const code = `import { z } from 'zod';\nimport { defineRoutine } from 'agora-agents';\ntype Tree = { name: string; children: Tree[] };\nconst tree: z.ZodType<Tree> = z.lazy(() => z.object({ name: z.string(), children: z.array(tree) }));\nexport default defineRoutine({ input: z.object({ n: z.number(), tree: tree.optional() }), output: z.object({ n: z.number(), keys: z.array(z.string()) }), handle: (body) => ({ n: body.n, keys: Object.keys(body), extra: true }) });\n`;
    const module = new QuickJSSandbox(await bundleForQuickJS(code));
    opened.push(module);
    expect((await module.run('handle', { n: 1, unknown: 'dropped' }, context())).value).toEqual({ n: 1, keys: ['n'] });
    expect(
      (await module.run('handle', { n: 2, tree: { name: 'a', children: [{ name: 'b', children: [] }] } }, context()))
        .value,
    ).toEqual({ n: 2, keys: ['n', 'tree'] });
    expect((await module.run('handle', { n: 'x' }, context())).invalid?.issues).toMatch(/^n: /);
    expect(
      (await module.run('handle', { n: 3, tree: { name: 'a', children: [{ name: 7 }] } }, context())).invalid?.issues,
    ).toMatch(/tree\.children\.0\.name/);
  });

  it('passes bodies both ways whole: non-ASCII text, and bodies past the 16 KB the sandbox keeps for them', async () => {
    const module = await sandbox(`(body, { tools }) => tools.echo(body)`);
    const tools = { echo: async (input: unknown) => input };
    for (const body of [
      { text: 'héllo wörld, 日本語, 🙂' },
      { text: 'x'.repeat(20_000) },
      { text: '🙂'.repeat(6_000) },
    ]) {
      expect((await module.run('handle', body, context({ tools }))).value).toEqual(body);
    }
  });

  it('names each tool call by its tool, however many tools there are', async () => {
    const module = await sandbox(
      `async (body, { tools }) => [await tools.second(body), await tools.first(), await tools.third(() => 1)]`,
    );
    const seen: unknown[] = [];
    const tool = (name: string) => async (input: unknown) => (seen.push([name, input]), name);
    const result = await module.run(
      'handle',
      { a: 1 },
      context({ tools: { first: tool('first'), second: tool('second'), third: tool('third') } }),
    );
    expect(result.value).toEqual(['second', 'first', 'third']);
    // What JSON cannot hold reaches the tool as null, as it always did.
    expect(seen).toEqual([
      ['second', { a: 1 }],
      ['first', null],
      ['third', null],
    ]);
  });

  it('refuses imports other than zod and agora-agents at build time', async () => {
    await expect(
      bundleForQuickJS(`import { execSync } from 'node:child_process';\nexport default () => execSync('id');\n`),
    ).rejects.toThrow(/may only import zod and agora-agents/);
  });

  it('fails later calls once closed', async () => {
    const module = await sandbox(`() => 1`);
    await module.close();
    await expect(module.run('handle', {}, context())).rejects.toThrow(/unloaded/);
  });
});
