// The fake's streaming reply: the server-sent events of the real Messages API, in its order.
import type { ServerResponse } from 'node:http';

/** A content block of a fake reply. */
export type ResponseBlock =
  { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: unknown };

/** How a text block is streamed: its pieces, and a wait before each (a delay in ms, or a promise the test resolves). */
export type StreamPacing = {
  /** The text's pieces, in order (default: two halves). They must join into the text. */
  chunks?: string[];
  /** Before each text piece: ms to wait (one number for all, or one per piece), or a function returning what to wait for. */
  delays?: number | number[] | ((index: number) => Promise<void> | number);
};

/** Waits as the pacing says before the text piece `index`. */
export async function pause(pacing: StreamPacing | undefined, index: number): Promise<void> {
  const delays = pacing?.delays;
  if (delays === undefined) return;
  const wait = typeof delays === 'function' ? await delays(index) : Array.isArray(delays) ? delays[index] : delays;
  if (typeof wait === 'number' && wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}

/**
 * Writes a message as the event sequence of the real streaming API, so the SDK's MessageStream assembles the same
 * one; text pieces are paced as scripted. Stops when the client closes the connection.
 */
export async function sendStream(
  response: ServerResponse,
  message: {
    content: ResponseBlock[];
    stop_reason: string;
    usage: { input_tokens: number; output_tokens: number };
  } & Record<string, unknown>,
  pacing?: StreamPacing,
): Promise<void> {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  response.flushHeaders();
  const send = (event: string, data: unknown) => response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  send('message_start', {
    type: 'message_start',
    message: {
      ...message,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: message.usage.input_tokens, output_tokens: 1 },
    },
  });
  send('ping', { type: 'ping' });
  for (const [index, block] of message.content.entries()) {
    if (block.type === 'text') {
      send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      const pieces = pacing?.chunks ?? halves(block.text);
      for (const [number, piece] of pieces.entries()) {
        await pause(pacing, number);
        if (response.destroyed) return;
        send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
      }
    } else {
      send('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
      });
      for (const piece of halves(JSON.stringify(block.input)))
        send('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: piece },
        });
    }
    send('content_block_stop', { type: 'content_block_stop', index });
  }
  send('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: message.stop_reason, stop_sequence: null },
    usage: { output_tokens: message.usage.output_tokens },
  });
  send('message_stop', { type: 'message_stop' });
  response.end();
}

/** Two deltas per block, so clients are seen to join pieces rather than take the first. */
export function halves(text: string): string[] {
  if (text.length < 2) return text ? [text] : [];
  const middle = Math.floor(text.length / 2);
  return [text.slice(0, middle), text.slice(middle)];
}
