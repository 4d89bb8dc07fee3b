import { silentLogger } from '../log.js';
import { Sender } from '../sender/sender.js';
import { urlArgument } from './_arguments.js';
import { defineCommand, printJson, requiredPositional, timeoutMs, timeoutOption } from './_command.js';
import { AGENT_TOKEN_OPTION, agentToken, jsonOption, wantsJson } from './_options.js';

/** `agora wellknown <url>`: the protocols an agent lists, with their names where it serves the documents. */
export const command = defineCommand(
  {
    name: 'wellknown',
    summary: "List an agent's protocols (GET /wellknown), with their names",
    usage: 'agora wellknown <url> [--json] [--timeout <s>]',
  },
  {
    options: {
      json: jsonOption('Print [{hash, name?, description?, multiround?, sources}] as JSON'),
      token: AGENT_TOKEN_OPTION,
      timeout: timeoutOption(30),
    },
    details: 'A hash whose document the agent does not serve (or that does not hash right) is listed without a name.',
    async run(args) {
      const url = urlArgument(requiredPositional(args, 0, '<url>'));
      const sender = new Sender({
        timeoutMs: timeoutMs(args, 30),
        logger: silentLogger,
        llm: null,
        ...agentToken(args),
      });
      const protocols = await sender.protocols(url);
      if (wantsJson(args)) {
        printJson(
          protocols.map(({ hash, sources, document }) => ({
            hash,
            ...(document
              ? {
                  name: document.metadata.name,
                  description: document.metadata.description,
                  multiround: document.metadata.multiround,
                }
              : {}),
            sources,
          })),
        );
        return 0;
      }
      if (protocols.length === 0) {
        process.stdout.write('no protocols listed\n');
        return 0;
      }
      for (const { hash, document } of protocols) {
        process.stdout.write(`${hash}  ${document ? document.metadata.name : '(document not served)'}\n`);
      }
      return 0;
    },
  },
);
