// Internal: the agent's memory as the commands that read or change it offline open it (`routines`, `protocols`).
import { join } from 'node:path';
import { FileMemory, type AgentMemory } from '../memory/file.js';

/** Opens the agent's memory: `<dir>/.agora/` files, or the Redis memory a `--store` URL names. */
export async function openMemory(
  dir: string,
  store: string | undefined,
): Promise<{ memory: AgentMemory; close(): Promise<void> }> {
  if (store && store !== 'memory') {
    const { openState } = await import('../agent.js');
    const state = await openState(dir, store, undefined);
    return { memory: state.memory, close: () => state.close() };
  }
  const memory = new FileMemory(join(dir, '.agora'));
  return { memory, close: () => memory.close() };
}
