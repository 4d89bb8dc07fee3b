// Where the browser tests find Chromium and write their screenshots.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Chromium's path: `AGORA_TEST_CHROMIUM` (set by `.ci/run`), else Debian's `/usr/bin/chromium`; undefined when neither exists. */
export function chromiumPath(): string | undefined {
  const candidates = [process.env.AGORA_TEST_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'];
  return candidates.find((path): path is string => typeof path === 'string' && path !== '' && existsSync(path));
}

/** Screenshots of each panel, written by every run (gitignored). */
export const SCREENSHOT_DIR = fileURLToPath(new URL('../../test-output/dashboard/', import.meta.url));
