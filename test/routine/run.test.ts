import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { AgoraError, describeError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { parseDocument } from '../../src/protocol/document.js';
import { defineRoutine, toRoutine, type RoutineContext } from '../../src/routine/define.js';
import { RoutineDeadlines } from '../../src/routine/deadlines.js';
import { protocolInvalidInputReply, runRoutine, type RoutineLimits } from '../../src/routine/run.js';
import type { JsonValue } from '../../src/schemas.js';

const document = parseDocument(
  '---\nname: Echo\ndescription: Echoes.\nmultiround: false\n---\nSend JSON {"text": string}.\n',
);
const withError = parseDocument(
  '---\nname: Strict\ndescription: Strict.\nmultiround: false\n---\nOn bad input reply {"error": "Invalid format"}.\n',
);
const context: Omit<RoutineContext, 'signal'> = {
  conversation: { id: null, turn: 1, state: {} },
  protocol: { name: 'Echo', hash: document.hash, metadata: document.metadata },
  logger: silentLogger,
  tools: {},
};

/** A run's limits on deadlines of its own: no state is shared between tests. */
const within = (timeoutMs: number): RoutineLimits => ({ timeoutMs, deadlines: new RoutineDeadlines() });

async function failureOf(promise: Promise<unknown>): Promise<AgoraError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(AgoraError);
  return error as AgoraError;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('runRoutine', () => {
  it('checks a loaded routine with its compiled schemas as zod would: defaults, transforms, the same refusal texts', async () => {
    const input = z.object({ q: z.number().int().default(1), s: z.string().trim().min(1), kind: z.enum(['a', 'b']) });
    const source = defineRoutine({
      input,
      output: z.object({ q: z.number(), s: z.string() }),
      handle: (body) => ({ q: body.q, s: body.s }),
    });
    const loaded = toRoutine(source, 'test.ts');
    expect(loaded.input).not.toBe(input);
    expect(await runRoutine(loaded, { s: '  x  ', kind: 'a' }, context, document, within(1000))).toEqual({
      q: 1,
      s: 'x',
    });
    const bodies: JsonValue[] = [{ s: ' ', kind: 'a' }, { q: 1.5, s: 'x', kind: 'c' }, { s: 3 }];
    for (const bad of bodies) {
      const [compiled, plain] = await Promise.all([
        failureOf(runRoutine(loaded, bad, context, document, within(1000))),
        failureOf(runRoutine(source, bad, context, document, within(1000))),
      ]);
      expect(compiled.message).toBe(plain.message);
      expect(compiled.code).toBe('BAD_REQUEST');
    }
  });

  it('runs a plain function, synchronous or not, and gives null for undefined', async () => {
    expect(
      await runRoutine(
        { kind: 'routine', handle: (body: { text: string }) => ({ echo: body.text }) },
        { text: 'hi' },
        context,
        document,
        within(1000),
      ),
    ).toEqual({ echo: 'hi' });
    expect(
      await runRoutine({ kind: 'routine', handle: async () => [1, 'two'] }, null, context, document, within(1000)),
    ).toEqual([1, 'two']);
    expect(
      await runRoutine({ kind: 'routine', handle: () => undefined }, null, context, document, within(1000)),
    ).toBeNull();
  });

  it('passes the parsed input and turns a Date into JSON', async () => {
    const routine = defineRoutine({
      input: z.object({ n: z.coerce.number() }),
      handle: ({ n }) => ({ doubled: n * 2, at: new Date(0) }),
    });
    expect(await runRoutine(routine, { n: '21' }, context, document, within(1000))).toEqual({
      doubled: 42,
      at: '1970-01-01T00:00:00.000Z',
    });
  });

  it('refuses a body its input schema refuses with BAD_REQUEST naming the protocol', async () => {
    const routine = defineRoutine({ input: z.object({ text: z.string() }), handle: ({ text }) => text });
    const error = await failureOf(runRoutine(routine, { text: 1 }, context, document, within(1000)));
    expect(error.code).toBe('BAD_REQUEST');
    expect(error.message).toMatch(/^body does not follow the protocol "Echo": ✖ .*\n  → at text$/);
  });

  it("answers a refused body with the routine's invalidInput, else the PD's own error reply", async () => {
    const input = z.object({ text: z.string() });
    expect(
      await runRoutine(
        defineRoutine({ input, invalidInput: { oops: true }, handle: () => 'never' }),
        {},
        context,
        document,
        within(1000),
      ),
    ).toEqual({ oops: true });
    expect(
      await runRoutine(defineRoutine({ input, handle: () => 'never' }), {}, context, withError, within(1000)),
    ).toEqual({
      error: 'Invalid format',
    });
    expect(protocolInvalidInputReply(document)).toBeUndefined();
  });

  it('fails with ROUTINE_FAILED when the routine throws or its output schema refuses the reply, the reason in the cause', async () => {
    const thrown = await failureOf(
      runRoutine(
        {
          kind: 'routine',
          handle: () => {
            throw new Error('boom');
          },
        },
        null,
        context,
        document,
        within(1000),
      ),
    );
    expect(thrown).toMatchObject({ code: 'ROUTINE_FAILED', message: 'Routine failed' });
    // The routine's error itself is the cause: logged as `Error: boom`, never `Error: Error: boom`.
    expect(describeError(thrown.cause)).toBe('Error: boom');
    const refused = await failureOf(
      runRoutine(
        { kind: 'routine', output: z.object({ ok: z.boolean() }), handle: () => ({ ok: 'yes' }) },
        null,
        context,
        document,
        within(1000),
      ),
    );
    expect((refused.cause as Error).message).toMatch(/the reply does not match the routine's output schema: ✖/);
    const unserializable = await failureOf(
      runRoutine({ kind: 'routine', handle: () => ({ big: 1n }) }, null, context, document, within(1000)),
    );
    expect(unserializable.code).toBe('ROUTINE_FAILED');
  });

  it('times a slow routine out and aborts the signal it reads', async () => {
    vi.useFakeTimers();
    const deadlines = new RoutineDeadlines();
    let signal: AbortSignal | undefined;
    const pending = runRoutine(
      {
        kind: 'routine',
        handle: (_body, routineContext) => {
          signal = routineContext.signal;
          return new Promise(() => {});
        },
      },
      null,
      context,
      document,
      { timeoutMs: 500, deadlines },
    );
    const outcome = failureOf(pending);
    expect(deadlines.pending).toBe(1);
    await vi.advanceTimersByTimeAsync(600);
    const error = await outcome;
    expect(error.code).toBe('ROUTINE_FAILED');
    expect((error.cause as Error).message).toContain('timed out after 500 ms');
    expect(signal?.aborted).toBe(true);
    expect(deadlines.pending).toBe(0);
  });
});
