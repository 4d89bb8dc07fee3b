import { z } from 'zod';
import { inSpan, TRACING } from '../telemetry/tracing.js';
import { AgoraError, describeError } from '../errors.js';
import { converse } from '../llm/tool-loop.js';
import { type LanguageModel } from '../llm/model.js';
import { silentLogger, type Logger } from '../log.js';
import { words, type Match, type Scored } from './keywords.js';
import type { Directory } from './directory.js';
import type { AgentProtocol, AgentRecord } from './records.js';

/** How an agent was chosen. */
export type RouteMethod = 'handoff' | 'keyword' | 'llm';

/** The choice of {@link Router.route}: the agent, the protocol of its that fits (if any), and why. */
export type RouteDecision = {
  agent: AgentRecord;
  by: RouteMethod;
  reason: string;
  /** The agent's protocol whose name and description best match the goal. */
  protocol?: AgentProtocol;
  score?: number;
  /** Other agents considered, best first (ids and scores). */
  candidates: { id: string; name: string; score: number }[];
};

/** Options of {@link Router}. */
export type RouterOptions = {
  directory: Directory;
  /** Asked when keywords tie or find nothing; an unknown or failed pick falls back to the keyword result. */
  llm?: LanguageModel;
  /** Candidates shown to the LLM at most (default 20). */
  maxLlmCandidates?: number;
  logger?: Logger;
};

/** What {@link Router.route} takes beside the goal. */
export type RouteOptions = {
  /** An explicit `handoff.next_agent`: an agent's directory name, id or URL. Always wins. */
  handoff?: string;
  signal?: AbortSignal;
};

const MAX_GOAL = 4000;
const llmPickSchema = z.object({ agent: z.string(), reason: z.string().optional() });

const SYSTEM = `You route a task to one agent of a directory. You are given the task and the candidate agents (id, name, description, protocols).
Answer with JSON only, no prose: {"agent": "<the id of the best candidate>", "reason": "<one short sentence>"}.
If no candidate fits at all, answer {"agent": "none", "reason": "..."}.`;

function describeMatches(matches: Match[]): string {
  const byField = new Map<string, string[]>();
  for (const { word, field } of matches) {
    const list = byField.get(field) ?? [];
    list.push(`"${word}"`);
    byField.set(field, list);
  }
  return [...byField].map(([field, list]) => `${list.join(', ')} in ${field}`).join('; ');
}

/** The agent's protocol best matching the goal's words (ties: the first listed); its only one when none matches. */
export function bestProtocol(agent: AgentRecord, goal: string): AgentProtocol | undefined {
  const wanted = new Set(words(goal));
  let best: AgentProtocol | undefined;
  let bestScore = 0;
  for (const protocol of agent.protocols) {
    let score = 0;
    for (const word of words(protocol.name)) if (wanted.has(word)) score += 3;
    for (const word of words(protocol.description)) if (wanted.has(word)) score += 1;
    if (score > bestScore) {
      best = protocol;
      bestScore = score;
    }
  }
  return best ?? (agent.protocols.length === 1 ? agent.protocols[0] : undefined);
}

/**
 * Routes a goal to an agent: an explicit handoff wins; else keyword scoring over names, descriptions and
 * protocols; else (keywords tie or find nothing) the LLM picks among the candidates, falling back to keywords.
 * @example const { agent, reason } = await router.route('forecast the weather in Paris');
 */
export class Router {
  readonly #directory: Directory;
  readonly #llm: LanguageModel | undefined;
  readonly #maxLlmCandidates: number;
  readonly #logger: Logger;

  constructor(options: RouterOptions) {
    this.#directory = options.directory;
    this.#llm = options.llm;
    this.#maxLlmCandidates = options.maxLlmCandidates ?? 20;
    this.#logger = options.logger ?? silentLogger;
  }

  /** Picks the agent for `goal`; throws NOT_FOUND (with why) when none fits. */
  route(goal: string, options: RouteOptions = {}): Promise<RouteDecision> {
    if (!TRACING.on) return this.#route(goal, options);
    return inSpan('agora.route', {}, async (span) => {
      const decision = await this.#route(goal, options);
      span.setAttributes({
        'agora.route.by': decision.by,
        'agora.route.agent.id': decision.agent.id,
        'agora.route.agent.name': decision.agent.name,
        ...(decision.protocol ? { 'agora.protocol.hash': decision.protocol.hash } : {}),
      });
      return decision;
    });
  }

  async #route(goal: string, options: RouteOptions): Promise<RouteDecision> {
    if (typeof goal !== 'string' || goal.trim() === '')
      throw new AgoraError('BAD_REQUEST', 'goal must be a non-empty string');
    if (goal.length > MAX_GOAL) throw new AgoraError('BAD_REQUEST', `goal is longer than ${MAX_GOAL} characters`);
    if (options.handoff !== undefined && options.handoff.trim() !== '')
      return this.#handoff(goal, options.handoff.trim());

    await this.#directory.refresh();
    const { index, records } = this.#directory.view;
    const scored = index.search(goal, this.#maxLlmCandidates, (id) => records.get(id)?.status === 'up');
    const candidates = scored.map(({ id, score }) => ({
      id,
      name: records.get(id)?.name ?? id,
      score: Math.round(score * 1000) / 1000,
    }));
    const top = scored[0];
    const tied = top === undefined ? [] : scored.filter((entry) => Math.abs(entry.score - top.score) < 1e-9);
    const keyword = top === undefined ? undefined : this.#keywordDecision(goal, top, tied.length, candidates);

    if (this.#llm !== undefined && (top === undefined || tied.length > 1)) {
      const pool =
        top === undefined
          ? this.#anyUp(records)
          : tied.map(({ id }) => records.get(id)).filter((record): record is AgentRecord => record !== undefined);
      const picked = await this.#llmPick(goal, pool, options.signal);
      if (picked !== undefined) {
        const agent = records.get(picked.agent)!;
        const why = top === undefined ? 'no keyword matched' : `${tied.length} agents tied on keywords`;
        return {
          agent,
          by: 'llm',
          reason: `LLM pick (${why}): ${picked.reason ?? 'no reason given'}`,
          ...this.#protocolOf(agent, goal),
          candidates,
        };
      }
    }
    if (keyword !== undefined) return keyword;
    throw new AgoraError(
      'NOT_FOUND',
      `No agent matches the goal: no word of it appears in the directory${this.#llm ? ', and the LLM picked none' : ''}`,
    );
  }

  #protocolOf(agent: AgentRecord, goal: string): { protocol?: AgentProtocol } {
    const protocol = bestProtocol(agent, goal);
    return protocol ? { protocol } : {};
  }

  #keywordDecision(
    goal: string,
    top: Scored,
    tiedCount: number,
    candidates: RouteDecision['candidates'],
  ): RouteDecision {
    const { records } = this.#directory.view;
    const agent = records.get(top.id)!;
    const tie = tiedCount > 1 ? ` (tied with ${tiedCount - 1} other${tiedCount > 2 ? 's' : ''}; first by id)` : '';
    return {
      agent,
      by: 'keyword',
      reason: `keyword score ${Math.round(top.score * 100) / 100}: ${describeMatches(top.matches)}${tie}`,
      score: Math.round(top.score * 1000) / 1000,
      ...this.#protocolOf(agent, goal),
      candidates,
    };
  }

  #anyUp(records: ReadonlyMap<string, AgentRecord>): AgentRecord[] {
    const up: AgentRecord[] = [];
    for (const record of records.values()) {
      if (record.status !== 'up') continue;
      up.push(record);
      if (up.length >= this.#maxLlmCandidates) break;
    }
    return up;
  }

  async #llmPick(
    goal: string,
    pool: AgentRecord[],
    signal: AbortSignal | undefined,
  ): Promise<{ agent: string; reason?: string } | undefined> {
    if (pool.length === 0 || this.#llm === undefined) return undefined;
    const listing = pool.map((agent) => ({
      id: agent.id,
      name: agent.name,
      description: agent.description.slice(0, 500),
      protocols: agent.protocols.slice(0, 10).map(({ name, description }) => `${name}: ${description.slice(0, 200)}`),
    }));
    try {
      const { text } = await converse(this.#llm, {
        system: SYSTEM,
        messages: [{ role: 'user', content: `Task: ${goal}\n\nCandidates:\n${JSON.stringify(listing, null, 1)}` }],
        maxSteps: 1,
        maxTokens: 200,
        temperature: 0,
        ...(signal ? { signal } : {}),
      });
      const json = /\{[\s\S]*\}/.exec(text)?.[0];
      const parsed = llmPickSchema.safeParse(json === undefined ? undefined : JSON.parse(json));
      if (!parsed.success) {
        this.#logger.warn(`hub routing: the LLM's pick is not {"agent": …}: ${text.slice(0, 200)}`);
        return undefined;
      }
      if (!pool.some((agent) => agent.id === parsed.data.agent)) {
        this.#logger.warn(
          `hub routing: the LLM picked ${JSON.stringify(parsed.data.agent.slice(0, 100))}, not a candidate: falling back to keywords`,
        );
        return undefined;
      }
      return parsed.data;
    } catch (error) {
      this.#logger.warn(`hub routing: LLM pick failed (${describeError(error)}): falling back to keywords`);
      return undefined;
    }
  }

  async #handoff(goal: string, target: string): Promise<RouteDecision> {
    const agent = await this.#directory.resolve(target);
    if (agent === undefined)
      throw new AgoraError(
        'NOT_FOUND',
        `Handoff to ${JSON.stringify(target.slice(0, 200))}: no such agent in the directory (name, id or URL)`,
      );
    if (agent.status === 'down')
      throw new AgoraError(
        'PEER_FAILURE',
        `Handoff to ${agent.name} (${agent.url}): the agent is down (${agent.lastError ?? 'missed checks'})`,
      );
    return {
      agent,
      by: 'handoff',
      reason: `explicit handoff to ${JSON.stringify(target)}`,
      ...this.#protocolOf(agent, goal),
      candidates: [],
    };
  }
}
