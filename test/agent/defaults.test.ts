// Every default of an agent is written once (AGENT_DEFAULTS): startAgent merges over it, `agora serve` shows it.
import { describe, expect, it } from 'vitest';
import { AGENT_DEFAULTS, withDefaults } from '../../src/agent/defaults.js';
import { seconds, SERVE_OPTIONS } from '../../src/cli/_serve-options.js';
import { DEFAULT_MAX_BODY_BYTES } from '../../src/edge/mount.js';
import { tombstoneMsOf } from '../../src/receiver.js';

describe('AGENT_DEFAULTS', () => {
  it('are what `agora serve --help` shows and parses to, in seconds where the flag is', () => {
    const shown = Object.fromEntries(Object.entries(SERVE_OPTIONS).map(([name, spec]) => [name, spec.default]));
    expect(shown).toMatchObject({
      port: String(AGENT_DEFAULTS.port),
      store: AGENT_DEFAULTS.store,
      'conversation-ttl': seconds(AGENT_DEFAULTS.conversationTtlMs),
      'routine-timeout': seconds(AGENT_DEFAULTS.routineTimeoutMs),
      'rescan-interval': seconds(AGENT_DEFAULTS.rescanIntervalMs),
      'max-body': String(AGENT_DEFAULTS.maxBodyBytes),
      'max-document': String(AGENT_DEFAULTS.maxDocumentBytes),
      'routine-threshold': String(AGENT_DEFAULTS.routineThreshold),
      'auto-approve': AGENT_DEFAULTS.autoApprove,
      workers: String(AGENT_DEFAULTS.workers),
    });
    expect(shown['conversation-ttl']).toBe('300');
  });

  it("hold the library's own values (the edge's body cap, the receiver's conversation TTL)", () => {
    expect(AGENT_DEFAULTS.maxBodyBytes).toBe(DEFAULT_MAX_BODY_BYTES);
    expect(tombstoneMsOf({})).toBe(AGENT_DEFAULTS.conversationTtlMs);
  });
});

describe('withDefaults', () => {
  it('takes a default only for a value left undefined: 0, false and null are kept', () => {
    const merged = withDefaults(
      { port: 3000, autoApprove: true, threshold: 5, llm: 'auto' as string | null },
      { port: 0, autoApprove: false, threshold: undefined, llm: null, extra: 1 },
    );
    expect(merged).toEqual({ port: 0, autoApprove: false, threshold: 5, llm: null, extra: 1 });
  });
});
