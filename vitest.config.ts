import { defineConfig } from 'vitest/config';
import { LLM_ENV } from './src/llm/providers.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Every variable that chooses or reaches an LLM, of every provider, is blank: a developer's key must never turn
    // a test into a paid call (a test that wants one sets it with vi.stubEnv, or passes the environment).
    env: Object.fromEntries(LLM_ENV.map((name) => [name, ''])),
  },
});
