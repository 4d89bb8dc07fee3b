// The LLM contract (provider-contract.ts) on each provider, through its real SDK against its fake on loopback; then
// two agents on different providers negotiating with each other.
import { afterAll, describe, expect, it } from 'vitest';
import { FakeAnthropic, FakeOpenAI, modelForFake } from '../../src/testing/index.js';
import { cleanupStack, km } from '../helpers/sender.js';
import { llmProviderContract, negotiateAndWriteRoutine, peerBrain, senderBrain } from './provider-contract.js';

llmProviderContract('anthropic');
llmProviderContract('openai');

describe('agents on different providers', { timeout: 60_000 }, () => {
  const cleanup = cleanupStack();
  afterAll(() => cleanup.run());

  it('negotiate a protocol (the receiver on Claude, the sender on an OpenAI-compatible API), and the receiver writes its routine', async () => {
    const peerFake = await FakeAnthropic.start({ fallback: peerBrain });
    const senderFake = await FakeOpenAI.start({ fallback: senderBrain });
    cleanup.push(
      () => peerFake.close(),
      () => senderFake.close(),
    );
    const { km: converted, routine } = await negotiateAndWriteRoutine(
      modelForFake(peerFake),
      modelForFake(senderFake),
      cleanup,
    );
    expect(converted).toBe(km(5));
    expect(routine).toContain('1609.344');
    // Each side spoke its own wire: the Messages API to the receiver's fake, Chat Completions to the sender's.
    expect(
      peerFake.requests.some((request) => request.system.includes('negotiates a protocol document (PD) with you')),
    ).toBe(true);
    expect(
      senderFake.requests.some(
        (request) =>
          request.body.messages[0].role === 'system' && request.system.includes('You negotiate a protocol document'),
      ),
    ).toBe(true);
    expect(peerFake.requests.some((request) => request.system.includes('You write routines'))).toBe(true);
  });
});
