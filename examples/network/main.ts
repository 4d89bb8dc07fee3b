// `npm run example:network`: a small Agora network, in the spirit of the paper's demo. A hub, three service agents
// (weather, currency, trains: each one tool over a hidden table) registered with it, and three user agents with two
// tasks each. Each user finds the service for a task by asking the hub to route the task's description (keyword
// match, the reason printed), then sends interleaved queries. The cost per query falls as protocols are negotiated
// (and published to the hub), found at the hub or at /wellknown and reused by another user, and as routines replace
// the LLMs on both sides.
//
// Offline by default: every agent thinks with the deterministic fake brain (../weather/brain.ts); with
// ANTHROPIC_API_KEY set, Claude does. All state goes to a temporary folder.
// `--queries N` (default 300) and `--window N` (default 50). Exits 1 when an answer differs from the hidden tables.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { startAgent, type RunningAgent } from 'agora-agents';
import { startHub } from 'agora-agents/hub';
import {
  agentCost,
  approvedRoutines,
  columns,
  exampleLlm,
  pathOf,
  progressLogger,
  quietLogger,
  routineAnswers,
  startAssistant,
  temporaryCopy,
  type Assistant,
  type Cost,
} from '../_shared.js';
import { SERVICES, USERS } from './services.js';

const { values } = parseArgs({
  options: { queries: { type: 'string', default: '300' }, window: { type: 'string', default: '50' } },
});
const queries = Number(values.queries);
const windowSize = Number(values.window);

const { llm, name, close: closeLlm } = await exampleLlm();
const folder = await temporaryCopy('agora-network-');
console.log(`${SERVICES.length} services and ${Object.keys(USERS).length} users, thinking with ${name}.\n`);

// The hub: a directory and a protocol database on loopback (private addresses are allowed for this demo only).
// Long steps (routines written, negotiations) show their progress on stderr after 2 s.
const progress = progressLogger();
const hub = await startHub({
  port: 0,
  host: '127.0.0.1',
  tickMs: 0,
  allowPrivateAgents: true,
  logger: quietLogger,
  rooms: false,
});
console.log(`Hub at ${hub.url}.`);

const services = new Map<string, RunningAgent>();
for (const service of SERVICES) {
  // An agent folder must exist (Receiver.start refuses a missing one); a service starts with an empty one.
  await mkdir(join(folder.dir, service.name), { recursive: true });
  const agent = await startAgent({
    dir: join(folder.dir, service.name),
    name: service.name,
    description: service.description,
    tools: [service.tool],
    port: 0,
    host: '127.0.0.1',
    llm,
    routineThreshold: 5,
    autoApprove: true,
    watch: false,
    logger: progress,
  });
  services.set(service.name, agent);
  const record = await hub.hub.register({ url: agent.url, name: service.name });
  console.log(`Registered ${record.name} at ${record.url}: "${record.description}"`);
}
const users = new Map<string, Assistant>();
for (const user of Object.keys(USERS))
  users.set(user, await startAssistant({ dir: join(folder.dir, user), llm, logger: progress, hub: hub.url }));

// Each task's service, found by the hub: the users are told no URL.
let misrouted = 0;
const routed = new Map<string, RunningAgent>();
for (const [user, tasks] of Object.entries(USERS)) {
  for (const task of tasks) {
    const decision = await hub.hub.route(task.goal);
    console.log(
      `Routed ${user}'s ${task.spec.name} ("${task.goal}") to ${decision.agent.name} by ${decision.by}: ${decision.reason}`,
    );
    if (decision.agent.name !== task.service) {
      misrouted++;
      console.error(`${user}'s ${task.spec.name} was routed to ${decision.agent.name}, expected ${task.service}`);
    }
    routed.set(`${user}/${task.spec.name}`, services.get(decision.agent.name)!);
  }
}
console.log('');

// Round after round, each user's tasks in turn: alice's two, then bob's, then carol's.
const calls = Object.entries(USERS).flatMap(([user, tasks]) =>
  tasks.map((task) => ({ user, task, run: users.get(user)!.sender.task(task.spec), uses: 0 })),
);
const cost = (): Cost =>
  [...[...services.values()].map(agentCost), ...[...users.values()].map((user) => user.cost())].reduce(
    (sum, part) => ({ calls: sum.calls + part.calls, tokens: sum.tokens + part.tokens }),
    { calls: 0, tokens: 0 },
  );

// Progress as it goes: each window's row when it is complete, and what changed in the network when it happens.
const widths = [9, 9, 9, 12, 16, 24];
console.log(
  columns(['queries', 'LLM calls', 'tokens', 'tokens/query', 'service routine', 'routines on both sides'], widths),
);
const records: { calls: number; tokens: number; serviceRoutine: boolean; noLlm: boolean }[] = [];
const seen = new Set<string>();
let mismatches = 0;
for (let index = 1; index <= queries; index++) {
  const call = calls[(index - 1) % calls.length]!;
  const user = users.get(call.user)!;
  const service = routed.get(`${call.user}/${call.task.spec.name}`)!;
  const input = call.task.input(call.uses++);
  const before = { cost: cost(), routines: routineAnswers(service) };
  const output = await progress.during(`query ${index}`, async () => {
    const answer = await call.run(input, { target: service.url });
    // Routines are written in the background: wait for that work, so every run tells the same story.
    await Promise.all([
      ...[...services.values()].map((agent) => agent.generator?.idle()),
      ...[...users.values()].map((other) => other.idle()),
    ]);
    return answer;
  });

  const expected = call.task.expected(input);
  if (!isDeepStrictEqual(output, expected)) {
    mismatches++;
    console.error(
      `query ${index}: ${call.user}'s ${call.task.spec.name}(${JSON.stringify(input)}) gave ${JSON.stringify(output)}, expected ${JSON.stringify(expected)}`,
    );
  }
  const after = cost();
  const serviceRoutine = routineAnswers(service) > before.routines;
  const path = pathOf(user.last, serviceRoutine);
  records.push({
    calls: after.calls - before.cost.calls,
    tokens: after.tokens - before.cost.tokens,
    serviceRoutine,
    noLlm: path === 'routines',
  });

  // What changed in the network with this query.
  const key = `${call.user}/${call.task.spec.name}`;
  if (path !== 'NL' && !seen.has(key)) {
    seen.add(key);
    const state = await user.sender.taskState(call.task.spec.name, service.url);
    const protocol = state.protocolHash
      ? service.receiver.registry.get(state.protocolHash)?.document.metadata.name
      : undefined;
    console.log(
      `  query ${index}: ${call.user}'s ${call.task.spec.name} ${state.negotiation?.outcome === 'agreed' ? 'negotiated (and published to the hub)' : 'found, and judged a fit,'} "${protocol}" with ${call.task.service}`,
    );
  }
  for (const [agentName, agent] of services)
    for (const routine of await approvedRoutines(agent))
      note(`routine:${agentName}/${routine}`, `query ${index}: ${agentName} approved its routine for "${routine}"`);
  for (const [userName, other] of users)
    for (const routine of await other.approved())
      note(`routine:${userName}/${routine}`, `query ${index}: ${userName} approved its routine for ${routine}`);
  if (index % windowSize === 0 || index === queries)
    printWindow(records.slice(Math.floor((index - 1) / windowSize) * windowSize, index));
}

const total = cost();
// The first window is all natural language: its rate is what the network would pay without Agora's lifecycle.
const firstWindow = records.slice(0, windowSize);
const naturalLanguageRate =
  firstWindow.reduce((sum, record) => sum + record.tokens, 0) / Math.max(1, firstWindow.length);
console.log(
  `\nTotal: ${total.calls} LLM calls, ${total.tokens} tokens for ${queries} queries (natural language all the way: about ${Math.round(naturalLanguageRate * queries)} tokens).`,
);
console.log(
  mismatches
    ? `${mismatches} answer${mismatches === 1 ? ' differs' : 's differ'} from the hidden tables.`
    : `All ${queries} answers match the hidden tables.`,
);
// The hub re-reads its agents every few seconds in a live network; here, once, now (registering again re-reads).
for (const agent of services.values()) await hub.hub.register({ url: agent.url });
const published = await hub.hub.protocols();
console.log(
  `The hub's protocol database: ${published.length === 0 ? 'empty (nothing negotiated yet)' : published.map((entry) => `"${entry.name}" (served by ${entry.servedBy.map((agent) => agent.name).join(', ') || 'no registered agent'})`).join(', ')}.`,
);

for (const user of users.values()) await user.close();
for (const agent of services.values()) await agent.close();
await hub.close();
await closeLlm();
await folder.remove();
process.exitCode = mismatches || misrouted ? 1 : 0;

function note(key: string, marker: string): void {
  if (seen.has(key)) return;
  seen.add(key);
  console.log(`  ${marker}`);
}

/** One row of the table: the queries of a window, what they cost, and how they were answered. */
function printWindow(window: typeof records): void {
  const start = records.length - window.length;
  const tokens = window.reduce((sum, record) => sum + record.tokens, 0);
  const share = (test: (record: (typeof records)[number]) => boolean) =>
    `${Math.round((100 * window.filter(test).length) / window.length)}%`;
  const calls = window.reduce((sum, record) => sum + record.calls, 0);
  console.log(
    columns(
      [
        `${start + 1}-${start + window.length}`,
        calls,
        tokens,
        Math.round(tokens / window.length),
        share((record) => record.serviceRoutine),
        share((record) => record.noLlm),
      ],
      widths,
    ),
  );
}
