import { checkAgent, type CaseResult } from '../conformance.js';
import { plural } from '../_plural.js';
import { urlArgument } from './_arguments.js';
import { defineCommand, printJson, requiredPositional, stringOption, timeoutMs, timeoutOption } from './_command.js';
import { AGENT_TOKEN_OPTION, jsonOption, wantsJson } from './_options.js';

const LABELS: Record<CaseResult['status'], string> = { pass: 'ok  ', fail: 'FAIL', skip: 'skip' };

/** `agora check <url>`: the wire profile's conformance cases against any Agora agent. */
export const command = defineCommand(
  {
    name: 'check',
    summary: "Run the wire profile's conformance cases against an agent",
    usage: 'agora check <url> [--token <token>] [--json] [--timeout <s>]',
  },
  {
    options: {
      token: AGENT_TOKEN_OPTION,
      json: jsonOption('Print the results as JSON'),
      timeout: timeoutOption(10),
    },
    details:
      'One line per case and a summary; exits 1 when any case fails. A Python SDK 0.2.0 agent (no /wellknown) is held to its documented quirks (docs/protocol.md).',
    async run(args) {
      const url = urlArgument(requiredPositional(args, 0, '<url>'));
      const json = wantsJson(args);
      const token = stringOption(args, 'token');
      const results = await checkAgent(url, {
        timeoutMs: timeoutMs(args, 10),
        ...(token ? { token } : {}),
        ...(json
          ? {}
          : {
              onCase: (result: CaseResult) =>
                process.stdout.write(
                  `${LABELS[result.status]}  ${result.name}${result.detail ? `: ${result.detail}` : ''}\n`,
                ),
            }),
      });
      const count = (status: CaseResult['status']) => results.filter((result) => result.status === status).length;
      if (json) printJson(results);
      else
        process.stdout.write(
          `\n${plural(count('pass'), 'case')} passed, ${count('fail')} failed, ${count('skip')} skipped\n`,
        );
      return count('fail') ? 1 : 0;
    },
  },
);
