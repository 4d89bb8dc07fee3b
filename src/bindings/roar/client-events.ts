// A ROAR agent's task events, as its `GET /roar/events` streams them over SSE: parsed, never trusted.
import { z } from 'zod';
import { AgoraError } from '../../errors.js';
import { readEvents } from '../../sender/stream.js';
import {
  agentBaseUrl,
  DEFAULT_SENDER_TIMEOUT_MS,
  peerHeadersFor,
  type TransportOptions,
} from '../../sender/transport.js';

/** One of ROAR's StreamEvents (`task_update`, `agent_status`…), as `/roar/events` sends them. */
export type RoarStreamEvent = {
  type: string;
  source?: string;
  session_id: string;
  data?: Record<string, unknown>;
  timestamp?: number;
};

const streamEventSchema = z.looseObject({
  type: z.string().max(50),
  source: z.string().max(600).optional(),
  session_id: z.string().max(600).nullish(),
  data: z.record(z.string(), z.unknown()).optional(),
  timestamp: z.number().optional(),
});

/** The agent's task events over SSE (`GET /roar/events`, one session's with `sessionId`), until `signal` aborts. */
export async function* roarEvents(
  url: string,
  transport: TransportOptions,
  options: { sessionId?: string; signal?: AbortSignal } = {},
): AsyncGenerator<RoarStreamEvent> {
  const base = agentBaseUrl(url);
  const target = `${base}/roar/events${options.sessionId ? `?session_id=${encodeURIComponent(options.sessionId)}` : ''}`;
  const fetchImpl = transport.fetch ?? globalThis.fetch;
  const timeoutMs = transport.timeoutMs ?? DEFAULT_SENDER_TIMEOUT_MS;
  let response: Response;
  try {
    const signal = AbortSignal.any([AbortSignal.timeout(timeoutMs), ...(options.signal ? [options.signal] : [])]);
    response = await fetchImpl(target, {
      headers: { ...(await peerHeadersFor(transport, target)), accept: 'text/event-stream' },
      signal,
    });
  } catch (error) {
    if (options.signal?.aborted) return;
    throw new AgoraError('PEER_FAILURE', `GET ${target}: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
  if (response.status !== 200 || !response.body)
    throw new AgoraError('PEER_FAILURE', `GET ${target}: HTTP ${response.status}`, { status: response.status });
  // Events come when tasks run: a quiet feed is not stalled (the agent's heartbeats keep the wait bounded).
  try {
    for await (const event of readEvents(response.body, `GET ${target}`, {
      fetch: fetchImpl,
      idleTimeoutMs: Math.max(timeoutMs, 60_000),
      ...(options.signal ? { signal: options.signal } : {}),
    })) {
      let data: unknown;
      try {
        data = JSON.parse(event.data);
      } catch {
        continue;
      }
      const parsed = streamEventSchema.safeParse(data);
      if (parsed.success) yield { ...parsed.data, session_id: parsed.data.session_id ?? '' } as RoarStreamEvent;
    }
  } catch (error) {
    if (options.signal?.aborted) return;
    throw error;
  }
}
