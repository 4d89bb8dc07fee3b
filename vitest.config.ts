import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // The library reads ANTHROPIC_API_KEY like the CLI: a developer's key must not turn tests into paid calls.
    env: { ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: '' },
  },
});
