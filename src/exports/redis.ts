// `agora-agents/redis`: every Redis backend, for agents and hubs whose processes share one state. Each loads ioredis
// only through this entry; the in-process defaults live beside their interfaces.
export {
  connectRedis,
  RedisConversationStore,
  type LockTimers,
  type RedisStoreOptions,
} from '../conversation/redis.js';
export { RedisEventLog, type RedisEventLogOptions } from '../conversation/redis-events.js';
export { RedisMemory } from '../memory/redis.js';
export { RedisReplayGuard } from '../bindings/roar/replay-redis.js';
export { RedisHubStore, type RedisHubStoreOptions } from '../hub/redis-store.js';
export { RedisRoomStore, type RedisRoomStoreOptions } from '../hub/rooms/redis-store.js';
