import { urlArgument } from './_arguments.js';
import {
  defineCommand,
  numberOption,
  printJson,
  requiredPositional,
  timeoutMs,
  timeoutOption,
  stringOption,
} from './_command.js';
import { CLIENT_CREDENTIALS_OPTIONS, clientCredentials, TOKEN_ISSUER_OPTION } from './_credentials.js';
import { AGENT_TOKEN_OPTION } from './_options.js';

/** `agora mcp <agent-url>`: the agent as an MCP server on stdio (a bridge to its `/mcp`), for hosts that start servers as processes. */
export const command = defineCommand(
  {
    name: 'mcp',
    summary: 'Serve an Agora agent as an MCP server over stdio',
    usage:
      'agora mcp <agent-url> [--token <token> | --client-id <id> --token-url <url>] [--timeout <s>] [--poll <s>] [--print-config [--name <name>]]',
  },
  {
    options: {
      token: AGENT_TOKEN_OPTION,
      ...CLIENT_CREDENTIALS_OPTIONS,
      'auth-issuer': TOKEN_ISSUER_OPTION,
      timeout: timeoutOption(60),
      poll: {
        type: 'string',
        value: '<seconds>',
        description: "How often the agent's tools are read, to tell the host of a change (list_changed); 0: never",
        default: '30',
      },
      'print-config': {
        type: 'boolean',
        description:
          'Print the MCP host configuration that starts this command from this install (absolute paths), and exit',
      },
      name: {
        type: 'string',
        value: '<name>',
        description: "The server's name in the printed configuration",
        default: 'agora',
      },
    },
    details:
      'An agent that serves /mcp is bridged: the host gets exactly its tools, schemas and answers, in one MCP session.\n' +
      'An agent without an MCP face: one generic tool per protocol (its body as `body`) and `ask`; the documents are resources.\n' +
      'Host configuration: `--print-config` prints it for this install, node and bin/agora.js by absolute\n' +
      'paths: the host runs this package from any folder, with no network. Published, the same runs as\n' +
      '{"command": "npx", "args": ["-y", "agora-agents", "mcp", "<agent-url>"]} (never `npx agora`: another package).',
    async run(args) {
      const url = urlArgument(requiredPositional(args, 0, '<agent-url>'));
      if (args.values['print-config'] === true) {
        const { mcpHostConfig } = await import('../bindings/mcp/host-config.js');
        const token = stringOption(args, 'token');
        if (token)
          console.error("agora: the configuration holds the agent's token (AGORA_TOKEN): keep it out of shared files");
        printJson(mcpHostConfig(url, { name: stringOption(args, 'name') ?? 'agora', token }));
        return 0;
      }
      const { serveMcpStdio } = await import('../bindings/mcp/stdio.js');
      const token = stringOption(args, 'token');
      const tokenSource = clientCredentials(args, url);
      const poll = numberOption(args, 'poll', { min: 0 }) ?? 30;
      await serveMcpStdio(url, {
        timeoutMs: timeoutMs(args, 60),
        pollMs: poll * 1000,
        token,
        ...(tokenSource ? { tokenSource } : {}),
      });
      return 0;
    },
  },
);
