import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { captureOutput } from '../helpers/cli.js';

const COMMANDS = [
  'serve',
  'hash',
  'validate',
  'send',
  'wellknown',
  'negotiate',
  'routines',
  'protocols',
  'init',
  'check',
  'hub',
  'route',
  'chain',
  'runs',
  'resume',
  'room',
];

afterEach(() => {
  vi.restoreAllMocks();
});

describe('agora --help', () => {
  it('lists every command and the exit codes', async () => {
    const output = captureOutput();
    expect(await main(['--help'])).toBe(0);
    for (const command of COMMANDS) expect(output.stdout()).toMatch(new RegExp(`^  ${command} +\\S`, 'm'));
    expect(output.stdout()).toMatch(/Exit codes: 0 .* 1 .* 2 usage error/);
  });

  it.each(COMMANDS)('agora %s --help shows usage and every option', async (command) => {
    const output = captureOutput();
    expect(await main([command, '--help'])).toBe(0);
    expect(output.stdout()).toMatch(new RegExp(`^agora ${command}: `));
    expect(output.stdout()).toMatch(new RegExp(`Usage: agora ${command}`));
    const { command: spec } = await import(`../../src/cli/${command}.ts`);
    for (const option of Object.keys(spec.options)) expect(output.stdout()).toContain(`--${option}`);
  });

  it('answers an unknown command or option with one line and exit code 2', async () => {
    let output = captureOutput();
    expect(await main(['frobnicate'])).toBe(2);
    expect(output.stderr().trim().split('\n')).toHaveLength(1);
    vi.restoreAllMocks();
    output = captureOutput();
    expect(await main(['hash', '--no-such-option'])).toBe(2);
    expect(output.stderr()).toMatch(/^agora hash: .*--no-such-option/);
    expect(output.stderr().trim().split('\n')).toHaveLength(1);
  });

  it('prints its version', async () => {
    const output = captureOutput();
    expect(await main(['--version'])).toBe(0);
    expect(output.stdout().trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
