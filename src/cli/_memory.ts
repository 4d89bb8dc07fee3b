// Internal: the agent's memory as the commands that read or change it offline open it (`routines`, `protocols`).
import { openStores } from '../agent/stores.js';
import type { AgentMemory } from '../memory/file.js';

/** Opens the agent's memory: `<dir>/.agora/` files, or the Redis memory a `--store` URL names. */
export async function openMemory(
  dir: string,
  store: string | undefined,
): Promise<{ memory: AgentMemory; close(): Promise<void> }> {
  const stores = await openStores(store ?? 'memory', { role: 'agent', dir });
  return {
    memory: stores.memory,
    async close() {
      await stores.memory.close();
      await stores.close();
    },
  };
}
