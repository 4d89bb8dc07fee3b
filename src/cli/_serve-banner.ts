// Internal: what `agora serve` says once `protocols/` is read: what it serves, what it does not and why, where.
import type { RunningAgent } from '../agent.js';
import type { LogFields } from '../log.js';
import type { Receiver } from '../receiver.js';
import { KEY_ENV, llmLabel } from './_options.js';

/** The documents of `protocols/` that `/wellknown` does not list (spec §4: no routine, no LLM), and why. */
async function unservedLines(receiver: Receiver): Promise<string[]> {
  const listed = new Set(Object.keys(await receiver.wellknown()));
  return receiver.registry
    .local()
    .filter(({ document }) => !listed.has(document.hash))
    .map(
      ({ name }) =>
        `not served: protocols/${name}.md (no routines/${name}.ts and no LLM: add the routine, or pick an LLM: --llm, ${KEY_ENV[0]}, or --llm offline for a demo)`,
    );
}

/** How `agora serve` writes a line of its banner (a record in JSON). */
export type Say = (line: string, fields?: LogFields) => void;

/** What `agora serve` says once `protocols/` is read: what it serves, what it does not and why, where it listens. */
export async function banner(
  agent: RunningAgent,
  say: Say,
  worker: number | undefined,
  dashboardNote: string,
): Promise<void> {
  const { receiver } = agent;
  const protocols = receiver.registry.local();
  const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;
  say(
    `serving ${receiver.name} (${count(protocols.length, 'protocol')}, ${count(receiver.routines.size, 'routine')}, ${count(receiver.tools.length, 'tool')}, LLM: ${llmLabel(receiver.llm)})`,
    {
      event: 'serving',
      agent: receiver.name,
      protocols: protocols.length,
      routines: receiver.routines.size,
      tools: receiver.tools.length,
      llm: llmLabel(receiver.llm),
      ...(receiver.llm?.provider === 'offline' ? { demo: true } : {}),
    },
  );
  for (const line of await unservedLines(receiver)) say(line, { event: 'not-served' });
  for (const server of receiver.mcpServers()) {
    const state =
      server.state === 'failed'
        ? `FAILED (${server.error ?? 'unknown'}); serving without its tools`
        : server.state === 'idle'
          ? 'not started yet (it starts when one of its tools is first needed)'
          : count(server.tools, 'tool');
    say(`MCP server ${server.name}: ${state}`, {
      event: 'mcp-server',
      server: server.name,
      state: server.state,
      tools: server.tools,
    });
  }
  // With workers, the primary says where all of them listen, once they do.
  if (worker === undefined) say(`listening on ${agent.url}`, { event: 'listening', url: agent.url });
  else say(`worker ready on ${agent.url}`, { event: 'worker-ready', url: agent.url });
  if (agent.dashboardUrl)
    say(`dashboard at ${agent.dashboardUrl}${dashboardNote}`, { event: 'dashboard', url: agent.dashboardUrl });
}

/** What the dashboard shows under the token rules: read-only on loopback without a token, off beyond it. */
export function dashboardNote(host: string, tokens: number): string {
  if (tokens > 0) return ' (sign in with your token)';
  return /^(127\.|::1$|localhost$|\[::1\]$)/.test(host)
    ? ' (read-only: set --token to approve routines from it)'
    : ' (off: it needs --token when listening beyond loopback)';
}
