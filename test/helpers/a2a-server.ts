// A real A2A agent for tests: @a2a-js/sdk's own server (DefaultRequestHandler behind its Express JSON-RPC and card
// handlers; the 0.3 compatibility layer on for a 0.3 agent) with a small executor that answers each message by `answer`.
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AgentCard, Message, Part, Task } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express from 'express';

/** What the executor does with a message's text (or data, as JSON): the answer, streamed in `pieces` when given. */
export type A2aAnswerer = (
  input: string,
) => string | { pieces: string[] } | { fail: true } | Promise<string | { pieces: string[] } | { fail: true }>;

export type A2aTestServer = { url: string; received: string[]; close(): Promise<void> };

const textPart = (value: string): Part => ({
  content: { $case: 'text', value },
  metadata: undefined,
  filename: '',
  mediaType: '',
});

/** The text of a message: its text parts, or its data parts as JSON. */
function inputOf(message: Message): string {
  return message.parts
    .map((part) =>
      part.content?.$case === 'text'
        ? part.content.value
        : part.content?.$case === 'data'
          ? JSON.stringify(part.content.value)
          : '',
    )
    .join('');
}

class TestExecutor implements AgentExecutor {
  constructor(
    private readonly answer: A2aAnswerer,
    private readonly received: string[],
  ) {}

  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = context;
    const input = inputOf(context.userMessage);
    this.received.push(input);
    const task: Task = {
      id: taskId,
      contextId,
      status: { state: 1, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [context.userMessage],
      metadata: undefined,
    };
    bus.publish(AgentEvent.task(task));
    const answer = await this.answer(input);
    if (typeof answer === 'object' && 'fail' in answer) {
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state: 4, message: undefined, timestamp: new Date().toISOString() },
          metadata: undefined,
        }),
      );
      bus.finished();
      return;
    }
    const pieces = typeof answer === 'string' ? [answer] : answer.pieces;
    const artifactId = randomUUID();
    pieces.forEach((piece, index) => {
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId,
            name: 'answer',
            description: '',
            parts: [textPart(piece)],
            metadata: undefined,
            extensions: [],
          },
          append: index > 0,
          lastChunk: index === pieces.length - 1,
          metadata: undefined,
        }),
      );
    });
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state: 3, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
    bus.finished();
  }

  async cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: '',
        status: { state: 5, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
    bus.finished();
  }
}

/**
 * Starts an a2a-js agent on a free loopback port, its card declaring one JSON-RPC interface of protocol `version`
 * ('1.0', or '0.3': the SDK's client then speaks the 0.3 wire) and these skills.
 */
export async function startA2aServer(options: {
  name: string;
  description: string;
  skills: { name: string; description: string; tags: string[] }[];
  answer: A2aAnswerer;
  version?: '1.0' | '0.3';
  legacyCompat?: boolean;
}): Promise<A2aTestServer> {
  const app = express();
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const card: AgentCard = {
    name: options.name,
    description: options.description,
    supportedInterfaces: [
      { url: `${url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: options.version ?? '1.0' },
    ],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text'],
    defaultOutputModes: ['text'],
    skills: options.skills.map((skill, index) => ({
      id: `skill-${index}`,
      ...skill,
      examples: [],
      inputModes: ['text'],
      outputModes: ['text'],
      securityRequirements: [],
    })),
    signatures: [],
  };
  const received: string[] = [];
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new TestExecutor(options.answer, received));
  // The compatibility layer on for a 0.3 agent (or when asked): with it on, a card read without an A2A-Version
  // header is a 0.3 card, and a 1.0 agent's card is refused such a request.
  const legacyCompat = { enabled: options.legacyCompat ?? options.version === '0.3' };
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler, legacyCompat }));
  app.use(
    '/a2a/jsonrpc',
    jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat }),
  );
  return {
    url,
    received,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
