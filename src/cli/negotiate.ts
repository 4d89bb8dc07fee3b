import { AgoraError } from '../errors.js';
import { consoleLogger } from '../log.js';
import { DEFAULT_MAX_ROUNDS } from '../negotiation.js';
import { Sender } from '../sender/sender.js';
import { folderArgument, urlArgument } from './_arguments.js';
import {
  defineCommand,
  displayPath,
  numberOption,
  printJson,
  requiredPositional,
  stringOption,
  timeoutMs,
  timeoutOption,
  UsageError,
} from './_command.js';
import {
  AGENT_TOKEN_OPTION,
  agentToken,
  chooseLlm,
  HUB_TOKEN_OPTION,
  jsonOption,
  llmOptions,
  wantsJson,
} from './_options.js';
import { hubOption } from './_hub.js';

function abbreviate(text: string, length = 100): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > length ? `${line.slice(0, length - 1)}…` : line;
}

/** The name a proposal gives its PD, else its first words. */
function proposalName(proposal: string): string {
  const name = /^\s*name:\s*["']?(.+?)["']?\s*$/m.exec(proposal)?.[1];
  return abbreviate(name ?? proposal, 60);
}

/** A task name from its description: its first whole words, up to 60 characters (a short task keeps every word). */
function taskName(task: string): string {
  let name = '';
  for (const word of task
    .replace(/[^\p{L}\p{N}\s-]+/gu, ' ')
    .trim()
    .split(/\s+/)) {
    if (name && name.length + 1 + word.length > 60) break;
    name = name ? `${name} ${word}` : word;
  }
  return name.slice(0, 60) || 'Task';
}

/** `agora negotiate <url> --task "…"`: negotiates a PD with an agent and writes it into `protocols/`. */
export const command = defineCommand(
  {
    name: 'negotiate',
    summary: 'Negotiate a protocol document for a task with an agent, and save it in protocols/',
    usage: 'agora negotiate <url> --task "<what for>" [--dir <agent folder>] [--json]',
  },
  {
    options: {
      task: { type: 'string', value: '<text>', description: 'What the protocol is for, in a sentence' },
      dir: {
        type: 'string',
        value: '<dir>',
        description: 'The agent folder whose protocols/ receives the document',
        default: '.',
      },
      'max-rounds': {
        type: 'string',
        value: '<count>',
        description: 'Messages to the agent before giving up',
        default: String(DEFAULT_MAX_ROUNDS),
      },
      ...llmOptions('Model that negotiates'),
      hub: hubOption('The hub asked for a known protocol first, and told of the new one'),
      'hub-token': HUB_TOKEN_OPTION,
      token: AGENT_TOKEN_OPTION,
      timeout: timeoutOption(120),
      json: jsonOption('Print {path, hash, name, rounds} as JSON'),
    },
    details:
      'Needs an LLM: --llm, ANTHROPIC_API_KEY or OPENAI_API_KEY (or `--llm offline`, a scripted demo model). Rounds are shown on stderr as they happen; the path and hash go to stdout.',
    async run(args) {
      const url = urlArgument(requiredPositional(args, 0, '<url>'));
      const task = stringOption(args, 'task')?.trim();
      if (!task) throw new UsageError('missing --task "<what the protocol is for>"');
      const maxRounds = numberOption(args, 'max-rounds', { min: 1, integer: true }) ?? DEFAULT_MAX_ROUNDS;
      const timeout = timeoutMs(args, 120);
      const dir = await folderArgument(stringOption(args, 'dir'), '--dir');
      const llm = await chooseLlm(args);
      if (!llm)
        throw new AgoraError(
          'LLM_UNAVAILABLE',
          'no LLM: negotiating needs one (--llm, ANTHROPIC_API_KEY or OPENAI_API_KEY; --llm offline for a demo without a key)',
        );
      const hub = stringOption(args, 'hub');
      const hubToken = stringOption(args, 'hub-token');
      const sender = new Sender({
        llm,
        dir,
        timeoutMs: timeout,
        hub: hub ?? null,
        ...(hubToken ? { hubToken } : {}),
        ...agentToken(args),
        logger: { ...consoleLogger(), info() {} },
      });
      const json = wantsJson(args);
      const step = (line: string) => process.stderr.write(`${line}\n`);
      step(`negotiating with ${url}: ${abbreviate(task)}`);
      const result = await sender.negotiate(
        url,
        { name: taskName(task), description: task },
        {
          maxRounds,
          onRound: (round, proposal, answer) => {
            step(`round ${round}/${maxRounds} → proposed "${proposalName(proposal)}"`);
            step(`  ← peer: ${abbreviate(answer)}`);
          },
        },
      );
      const { document, rounds } = result;
      const path = result.path ?? '';
      const usage = sender.usage();
      if (json) {
        printJson({
          path,
          hash: document.hash,
          name: document.metadata.name,
          rounds,
          llmCalls: usage.llmCalls,
          inputTokens: usage.inputTokens,
          outputTokens: usage.outputTokens,
        });
        return 0;
      }
      step(
        `agreed on "${document.metadata.name}" after ${rounds} round${rounds === 1 ? '' : 's'} (${usage.llmCalls} LLM calls, ${usage.inputTokens + usage.outputTokens} tokens)`,
      );
      process.stdout.write(`${displayPath(path)}\n${document.hash}\n`);
      return 0;
    },
  },
);
