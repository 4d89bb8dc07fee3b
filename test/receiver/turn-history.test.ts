import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/metrics.js';
import { silentLogger } from '../../src/log.js';
import type { ProtocolDocument } from '../../src/protocol/document.js';
import { TurnAnswerer, type Turn } from '../../src/receiver/answer.js';
import type { AgentFolder } from '../../src/receiver/folder.js';
import type { TurnRoute } from '../../src/receiver/route.js';
import { RoutineDeadlines } from '../../src/routine/deadlines.js';

// Only what a generated routine's turn reads of the folder: a logger and the toolbox.
const folder = {
  routineLogger: () => silentLogger,
  toolbox: () => ({}),
  routineFor: () => undefined,
} as unknown as AgentFolder;
const document = { hash: 'h', metadata: { name: 'Echo' } } as unknown as ProtocolDocument;
const route: TurnRoute = { kind: 'generated', known: { document, origin: 'local' }, runner: async (body) => body };

function answerer(): TurnAnswerer {
  return new TurnAnswerer({
    folder,
    counters: new Metrics(),
    logger: silentLogger,
    extensions: {},
    llm: undefined,
    routineLimits: { timeoutMs: 1000, deadlines: new RoutineDeadlines() },
    maxHistory: 20,
    maxHistoryChars: 10_000,
  });
}

describe('the history a turn keeps', () => {
  it('records a conversation turn answered by an extension routine, for the LLM of later turns', async () => {
    const turn: Turn = { id: 'c1', turn: 1, state: {}, history: [] };
    expect(await answerer().answer(route, turn, { value: 1 }, undefined)).toEqual({ value: 1 });
    expect(turn.history).toEqual([
      { role: 'peer', body: { value: 1 } },
      { role: 'agent', body: { value: 1 } },
    ]);
  });

  it('records nothing for a single-round turn, which no later turn reads', async () => {
    const turn: Turn = { id: null, turn: 1, state: {}, history: [] };
    expect(await answerer().answer(route, turn, { value: 1 }, undefined)).toEqual({ value: 1 });
    expect(turn.history).toEqual([]);
  });
});
