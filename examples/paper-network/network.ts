// One run of the paper's network: three hubs that pull each other's catalogues, the service agents (each a real
// agent, `startAgent`, on its own loopback port, registered with one hub), the user agents (each a Sender with its
// own folder, memory and task routines, using one hub), and the script played action after action. With `agora`
// off the users never look for a protocol nor negotiate: natural language all the way. Every answer is checked
// against the service's hidden table.
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { startAgent, type Logger, type RunningAgent } from 'agora-agents';
import { RoutineTypeChecker } from 'agora-agents/generation';
import { createHubDashboard, HubClient, startHub, type RunningHub, type UsageReport } from 'agora-agents/hub';
import { approvedRoutines, startAssistant, temporaryCopy, type Assistant } from '../_shared.js';
import type { NetworkLlm, Sums } from './llm.js';
import { expected, toolsOf, type Action, type Service } from './scenario.js';

/** How an action was served. */
export type Path = 'natural language' | 'negotiation' | 'protocol with LLM' | 'protocol with routines';

/** One action as it went: how, what it cost, and whether its answer was right. */
export type Outcome = {
  /** Who asked what of whom: the user's number, the task's name, the service's name. */
  user: number;
  task: string;
  service: string;
  path: Path;
  calls: number;
  input: number;
  output: number;
  dollars: number;
  ms: number;
  /** Whether a routine was written during the action (and its time spent building and checking it). */
  wroteRoutine: boolean;
  /** The action's LLM calls by kind of prompt. */
  kinds: Record<string, Sums>;
  wrong?: string;
};

/** What a run did, besides its outcomes. */
export type RunSummary = {
  outcomes: Outcome[];
  seconds: number;
  negotiated: number;
  routines: { services: number; users: number };
  catalogues: number[];
};

/** Settings of a run; `agora: false` is the natural-language-only run. */
export type RunOptions = {
  agora: boolean;
  /** The three hubs (see {@link startHubs}); the run registers its services with them and removes them at its end. */
  hubs: RunningHub[];
  seed: number;
  services: Service[];
  users: number;
  actions: Action[];
  llm: NetworkLlm;
  logger: Logger;
  /** The hubs pull their peers' catalogues every this many actions. */
  syncEvery: number;
  /** Uses of a protocol before a routine is written for it: by a service (default 5), by a user's task (default 2). */
  routineThresholds?: { service: number; user: number };
  /** Called after each action (progress, the live curve). */
  onOutcome?: (index: number, outcome: Outcome) => void;
};

const USAGE_PATH: Record<Path, NonNullable<UsageReport['path']>> = {
  'natural language': 'natural-language',
  negotiation: 'negotiation',
  'protocol with LLM': 'protocol-llm',
  'protocol with routines': 'protocol-routine',
};

/** A free loopback port, so that each hub can be told its peers' addresses before it starts. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts three hubs, each pulling the two others' catalogues (on demand: `syncPeers`, every `syncEvery` actions). The
 * first one serves its dashboard, whose Cost panel draws what the runs report to it (`port`: its port, 0 for any).
 */
export async function startHubs(logger: Logger, port = 0): Promise<RunningHub[]> {
  const ports = [port || (await freePort()), await freePort(), await freePort()];
  const url = (port: number) => `http://127.0.0.1:${port}`;
  return Promise.all(
    ports.map((port, index) =>
      startHub({
        ...(index === 0 ? { mounts: (hub) => [createHubDashboard(hub, { logger })] } : {}),
        port,
        host: '127.0.0.1',
        tickMs: 0,
        allowPrivateAgents: true,
        rooms: false,
        logger,
        peers: ports.filter((other) => other !== port).map(url),
      }),
    ),
  );
}

/** Plays the script on a fresh network and closes it. */
export async function runNetwork(options: RunOptions): Promise<RunSummary> {
  const { llm, logger } = options;
  const started = performance.now();
  const folder = await temporaryCopy(`agora-paper-${options.agora ? 'agora' : 'nl'}-`);
  const { hubs } = options;
  // Each action's cost, reported to the first hub as it goes: its dashboard draws the curve live.
  const usage = new HubClient({ url: hubs[0]!.url });
  const series = options.agora ? 'agora' : 'natural-language-only';
  const services = new Map<string, RunningAgent>();
  const users: Assistant[] = [];
  // One compiler for every agent of this process: each would otherwise start and warm its own (seconds each).
  const typeChecker = new RoutineTypeChecker();
  try {
    for (const [index, service] of options.services.entries()) {
      const dir = join(folder.dir, service.name);
      await mkdir(dir, { recursive: true });
      const agent = await startAgent({
        dir,
        name: service.name,
        description: service.description,
        tools: toolsOf(service, options.seed),
        port: 0,
        host: '127.0.0.1',
        llm: llm.model(),
        routineThreshold: options.routineThresholds?.service ?? 5,
        autoApprove: true,
        typeChecker,
        watch: false,
        dashboard: false,
        // Protocols reach a service from the hubs, on loopback here.
        allowPrivateSources: true,
        logger,
      });
      services.set(service.name, agent);
      await hubs[index % hubs.length]!.hub.register({ url: agent.url, name: service.name });
    }
    for (let user = 0; user < options.users; user++)
      users.push(
        await startAssistant({
          dir: join(folder.dir, `user-${user + 1}`),
          llm: llm.model(),
          logger,
          threshold: options.routineThresholds?.user ?? 2,
          typeChecker,
          hub: hubs[user % hubs.length]!.url,
          // A task looks for a protocol from its second use with a service, and negotiates one from its third.
          thresholds: options.agora
            ? { lookForProtocolFrom: 2, negotiateFrom: 3 }
            : { lookForProtocolFrom: Infinity, negotiateFrom: Infinity },
        }),
      );

    const outcomes: Outcome[] = [];
    for (const [index, action] of options.actions.entries()) {
      if (options.agora && index > 0 && index % options.syncEvery === 0)
        await Promise.all(hubs.map((hub) => hub.hub.syncPeers()));
      const user = users[action.user]!;
      const service = services.get(action.service.name)!;
      const mark = llm.ledger.bills.length;
      const began = performance.now();
      let wrong: string | undefined;
      try {
        const output = await user.sender.task(action.task.spec)(action.input, { target: service.url });
        // Routines are written in the background: wait for them, so the action that triggers one pays for it.
        await Promise.all([service.generator?.idle(), user.idle()]);
        const right = expected(action, options.seed);
        if (!isDeepStrictEqual(output, right)) wrong = `${JSON.stringify(output)}, expected ${JSON.stringify(right)}`;
      } catch (error) {
        wrong = `failed: ${error instanceof Error ? error.message : String(error)}`;
      }
      const bill = llm.ledger.since(mark);
      const hash = user.last?.hash;
      const path: Path =
        bill.kinds.has('proposeProtocol') || bill.kinds.has('answerNegotiation')
          ? 'negotiation'
          : !hash
            ? 'natural language'
            : bill.calls === 0
              ? 'protocol with routines'
              : 'protocol with LLM';
      const outcome: Outcome = {
        user: action.user,
        task: action.task.spec.name,
        service: action.service.name,
        path,
        calls: bill.calls,
        input: bill.input,
        output: bill.output,
        dollars: bill.dollars,
        ms: performance.now() - began,
        wroteRoutine: bill.kinds.has('writeRoutine') || bill.kinds.has('writeTaskRoutine'),
        kinds: Object.fromEntries(bill.kinds),
        ...(wrong
          ? {
              wrong: `action ${index + 1} (user-${action.user + 1} ${action.task.spec.name} → ${action.service.name} ${JSON.stringify(action.input)}): ${wrong}`,
            }
          : {}),
      };
      outcomes.push(outcome);
      await usage.reportUsage({
        series,
        path: USAGE_PATH[path],
        calls: outcome.calls,
        inputTokens: outcome.input,
        outputTokens: outcome.output,
        dollars: outcome.dollars,
      });
      options.onOutcome?.(index, outcome);
    }
    let serviceRoutines = 0;
    for (const agent of services.values()) serviceRoutines += (await approvedRoutines(agent)).length;
    let userRoutines = 0;
    for (const user of users) userRoutines += (await user.approved()).length;
    await Promise.all(hubs.map((hub) => hub.hub.syncPeers()));
    return {
      outcomes,
      seconds: (performance.now() - started) / 1000,
      negotiated: outcomes.filter((outcome) => outcome.path === 'negotiation').length,
      routines: { services: serviceRoutines, users: userRoutines },
      catalogues: await Promise.all(hubs.map(async (hub) => (await hub.hub.protocols()).length)),
    };
  } finally {
    for (const user of users) await user.close();
    for (const agent of services.values()) await agent.close();
    // The hubs outlive the run (the next run and the dashboard use them): its services leave them.
    for (const hub of hubs)
      for (const record of await hub.hub.agents({ includeDown: true })) await hub.hub.removeAgent(record.id);
    await typeChecker.close();
    await folder.remove();
  }
}
