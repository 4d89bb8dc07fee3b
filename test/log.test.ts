import { afterEach, describe, expect, it, vi } from 'vitest';
import { consoleLogger, inert, LineBatch, MAX_LOG_MESSAGE } from '../src/log.js';
import { Metrics, MAX_LABEL_LENGTH } from '../src/metrics.js';

function captured(options: Parameters<typeof consoleLogger>[1] = {}) {
  const lines: string[] = [];
  const logger = consoleLogger('agora', { ...options, write: (line) => void lines.push(line) });
  return { logger, lines };
}

describe('log lines carrying peer text', () => {
  it('cannot forge a line: a name with a newline stays on one line, escaped', () => {
    const { logger, lines } = captured();
    logger.warn('could not serve Legit\n2026-01-01T00:00:00.000Z agora error FORGED: keys leaked\r\u001b[2J\u2028');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.split('\n')).toEqual([
      expect.stringContaining('Legit\\n2026-01-01T00:00:00.000Z agora error FORGED: keys leaked\\r\\u001b[2J\\u2028'),
      '',
    ]);
  });

  it('caps a 900 KB name', () => {
    const { logger, lines } = captured();
    logger.info(`learned ${'N'.repeat(900_000)}`);
    expect(lines[0]!.length).toBeLessThan(MAX_LOG_MESSAGE + 200);
    expect(lines[0]).toContain('more characters)');
    expect(inert('short')).toBe('short');
  });

  it('writes JSON lines with pino, one per event, capped too', () => {
    const { logger, lines } = captured({ format: 'json' });
    logger.error(`bad\nname ${'x'.repeat(900_000)}`);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.trimEnd().includes('\n')).toBe(false);
    const entry = JSON.parse(lines[0]!) as { level: string; name: string; msg: string; time: string };
    expect(entry).toMatchObject({ level: 'error', name: 'agora' });
    expect(entry.msg.length).toBeLessThan(MAX_LOG_MESSAGE + 100);
  });

  it('writes nothing below its level, and has no debug unless asked', () => {
    const quiet = captured({ level: 'warn' });
    quiet.logger.info('hidden');
    quiet.logger.warn('shown');
    expect(quiet.lines).toEqual([expect.stringContaining('agora warn shown')]);
    expect(quiet.logger.debug).toBeUndefined();
    expect(captured().logger.debug).toBeUndefined();
    const verbose = captured({ level: 'debug' });
    verbose.logger.debug!('request line');
    expect(verbose.lines).toEqual([expect.stringContaining('agora debug request line')]);
  });
});

describe('metric labels carrying peer text', () => {
  it('caps label values at 64 characters: five 900 KB names make a small /metrics', () => {
    const metrics = new Metrics();
    for (let index = 0; index < 5; index++) {
      const name = `${index}${'n'.repeat(900_000)}`;
      metrics.query('failure', name);
      metrics.llmCall(name, 'suitability', 10, 1);
      metrics.routineLatency(name, 0.01);
    }
    const page = metrics.render();
    expect(page.length).toBeLessThan(20_000);
    for (const match of page.matchAll(/protocol="([^"]*)"/g))
      expect(match[1]!.length).toBeLessThanOrEqual(MAX_LABEL_LENGTH);
    expect(page).toContain(`protocol="0${'n'.repeat(MAX_LABEL_LENGTH - 2)}…"`);
  });
});

describe('log lines written in batches', () => {
  afterEach(() => void vi.useRealTimers());

  it('holds lines until the delay, then writes them in one chunk', () => {
    vi.useFakeTimers();
    const chunks: string[] = [];
    const batch = new LineBatch((chunk) => void chunks.push(chunk), 20);
    batch.write('one\n');
    batch.write('two\n');
    vi.advanceTimersByTime(19);
    expect(chunks).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(chunks).toEqual(['one\ntwo\n']);
    batch.write('three\n');
    batch.flush();
    expect(chunks).toEqual(['one\ntwo\n', 'three\n']);
  });

  it('writes at most 4 KiB of whole lines at a time, counted in bytes, before the delay is up', () => {
    vi.useFakeTimers();
    const chunks: string[] = [];
    const batch = new LineBatch((chunk) => void chunks.push(chunk), 1000);
    // 100 lines of 101 bytes (one character is two bytes in UTF-8).
    const line = `${'é'.repeat(1)}${'x'.repeat(98)}\n`;
    for (let index = 0; index < 100; index++) batch.write(line);
    expect(chunks.length).toBeGreaterThanOrEqual(2);
    for (const chunk of chunks) {
      expect(Buffer.byteLength(chunk)).toBeLessThanOrEqual(4096);
      expect(chunk.endsWith('\n')).toBe(true);
    }
    vi.advanceTimersByTime(1000);
    expect(chunks.join('')).toBe(line.repeat(100));
  });
});
