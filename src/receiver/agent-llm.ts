// The receiver's LLM: how the agent presents itself to it, and each call's setup (its usage counted).
import { addUsage, type TurnUsage } from '../_usage.js';
import type { AgentProfile, ResponderCall } from '../llm/peer-answers.js';
import type { LanguageModel } from '../llm/model.js';
import type { Metrics } from '../metrics.js';
import type { ProtocolRegistry } from '../protocol/registry.js';
import type { AgentFolder } from './folder.js';

/** What {@link AgentLlm} reads: the agent's folder and documents, its counters, its bounds on one call. */
export type AgentLlmOptions = {
  model: LanguageModel;
  folder: AgentFolder;
  registry: ProtocolRegistry;
  counters: Metrics;
  /** Bound on LLM calls per answer in the tool loop (undefined: the loop's own). */
  maxToolSteps: number | undefined;
  /** Characters one LLM call may carry. */
  maxLlmChars: number;
};

/** How an agent presents itself to its LLM: name, description, the protocols of its folder, its tools. */
export function agentProfile(folder: AgentFolder, registry: ProtocolRegistry): AgentProfile {
  return {
    name: folder.name,
    description: folder.description,
    protocols: registry
      .local()
      .map(({ document }) => ({ name: document.metadata.name, description: document.metadata.description })),
    tools: folder.tools,
  };
}

/** The LLM of an agent that has one: each call set up with the agent's profile, its tokens counted by protocol. */
export class AgentLlm {
  readonly model: LanguageModel;
  readonly #options: AgentLlmOptions;

  constructor(options: AgentLlmOptions) {
    this.model = options.model;
    this.#options = options;
  }

  /** A call's setup, counting its tokens under a protocol label and purpose (and in the turn's `usage`, when given). */
  call(protocol: string, purpose: string, signal?: AbortSignal, turnUsage?: TurnUsage): ResponderCall {
    const { counters, maxToolSteps, maxLlmChars } = this.#options;
    const call: ResponderCall = {
      model: this.model,
      profile: agentProfile(this.#options.folder, this.#options.registry),
      onUsage: (usage) => {
        counters.llmCall(protocol, purpose, usage.inputTokens, usage.outputTokens);
        if (turnUsage) addUsage(turnUsage, usage);
      },
      maxChars: maxLlmChars,
    };
    if (maxToolSteps !== undefined) call.maxSteps = maxToolSteps;
    if (signal) call.signal = signal;
    return call;
  }
}
