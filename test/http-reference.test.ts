import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { declaredRoutes } from '../scripts/http-routes.js';

describe('docs/http-api.md', () => {
  it('lists every route every mount of an agent and of a hub declares, with its methods', async () => {
    const page = await readFile(new URL('../docs/http-api.md', import.meta.url), 'utf8');
    const routes = await declaredRoutes(new URL('..', import.meta.url).pathname);
    expect(routes.length).toBeGreaterThan(20);
    for (const route of routes) {
      const row = new RegExp(
        `^\\| ${route.mount} \\| \`${route.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\`[^|]*\\| ${route.allow} \\|`,
        'm',
      );
      expect(page, `${route.mount} ${route.path}`).toMatch(row);
    }
  }, 60_000);
});
