import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { writeSoon, type BatchOwner } from '../../src/edge/_write-batch.js';

type FakeResponse = {
  writes: string[];
  shouldKeepAlive: boolean;
  headersSent: boolean;
  destroyed: boolean;
  destroy(): void;
  writeHead(status: number, headers: Record<string, string>): FakeResponse;
  end(body: string): void;
};

// What the batch touches of a ServerResponse, recording the writes in one shared log to see their order.
function fakeResponse(log: string[], name: string, options: { throwOnWrite?: boolean } = {}): FakeResponse {
  const response: FakeResponse = {
    writes: [],
    shouldKeepAlive: true,
    headersSent: false,
    destroyed: false,
    destroy() {
      response.destroyed = true;
    },
    writeHead(status) {
      if (options.throwOnWrite) throw new Error('Invalid character in header content');
      response.headersSent = true;
      log.push(`${name} ${status}`);
      return response;
    },
    end(body) {
      response.writes.push(body);
    },
  };
  return response;
}

function owner(
  closing = false,
): BatchOwner & { told: [string, unknown][]; closing: boolean; names: Map<unknown, string> } {
  const names = new Map<unknown, string>();
  const told: [string, unknown][] = [];
  return { closing, names, told, written: (response, error) => void told.push([names.get(response) ?? '?', error]) };
}

const whole = (body: string) => ({ status: 200, headers: { 'content-type': 'application/json' }, body });
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

afterEach(() => {
  vi.useRealTimers();
});

describe('writeSoon', () => {
  it('writes nothing at once; after the turn, every queued response in order, each owner told', async () => {
    const log: string[] = [];
    const server = owner();
    const responses = ['a', 'b', 'c'].map((name) => {
      const response = fakeResponse(log, name);
      server.names.set(response, name);
      writeSoon(response as unknown as ServerResponse, whole(`"${name}"`), server);
      return response;
    });
    expect(log).toEqual([]);
    expect(server.told).toEqual([]);
    await turn();
    expect(log).toEqual(['a 200', 'b 200', 'c 200']);
    expect(responses.map((response) => response.writes)).toEqual([['"a"'], ['"b"'], ['"c"']]);
    expect(server.told).toEqual([
      ['a', undefined],
      ['b', undefined],
      ['c', undefined],
    ]);
  });

  it('drops the connection of a response that cannot be written, tells its owner why, and writes the rest', async () => {
    const log: string[] = [];
    const server = owner();
    const bad = fakeResponse(log, 'bad', { throwOnWrite: true });
    const good = fakeResponse(log, 'good');
    server.names.set(bad, 'bad').set(good, 'good');
    writeSoon(bad as unknown as ServerResponse, whole('{}'), server);
    writeSoon(good as unknown as ServerResponse, whole('{}'), server);
    await turn();
    expect(bad.destroyed).toBe(true);
    expect(log).toEqual(['good 200']);
    expect(server.told[0]![0]).toBe('bad');
    expect(String(server.told[0]![1])).toContain('Invalid character');
    expect(server.told[1]).toEqual(['good', undefined]);
  });

  it('skips a response whose client went away meanwhile, and still tells its owner', async () => {
    const log: string[] = [];
    const server = owner();
    const gone = fakeResponse(log, 'gone');
    server.names.set(gone, 'gone');
    writeSoon(gone as unknown as ServerResponse, whole('{}'), server);
    gone.destroy();
    await turn();
    expect(log).toEqual([]);
    expect(server.told).toEqual([['gone', undefined]]);
  });

  it('keeps no connection alive for an owner closing by the time of the write', async () => {
    const server = owner();
    const response = fakeResponse([], 'r');
    writeSoon(response as unknown as ServerResponse, whole('{}'), server);
    server.closing = true;
    await turn();
    expect(response.shouldKeepAlive).toBe(false);
  });

  it('writes a response queued while a batch is written in the next batch', async () => {
    const log: string[] = [];
    const late = fakeResponse(log, 'late');
    const first = fakeResponse(log, 'first');
    const server = owner();
    let queuedAgain = false;
    const chaining: BatchOwner = {
      closing: false,
      written: (response, error) => {
        server.written(response, error);
        if (queuedAgain) return;
        queuedAgain = true;
        writeSoon(late as unknown as ServerResponse, whole('{}'), server);
      },
    };
    writeSoon(first as unknown as ServerResponse, whole('{}'), chaining);
    await turn();
    expect(log).toEqual(['first 200']);
    await turn();
    expect(log).toEqual(['first 200', 'late 200']);
  });

  it("is not held by a test's fake timers", async () => {
    vi.useFakeTimers();
    const log: string[] = [];
    writeSoon(fakeResponse(log, 'r') as unknown as ServerResponse, whole('{}'), owner());
    // Real time passes while the fake clock stands still: the write happens all the same.
    await sleep(20);
    expect(log).toEqual(['r 200']);
  });
});
