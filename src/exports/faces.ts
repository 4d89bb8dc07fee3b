// `agora-agents/faces`: the other protocols an agent speaks (ROAR, OAP, A2A) as mounts of its edge, and their parts.
export * from '../faces/index.js';
export { RedisReplayGuard } from '../faces/roar/replay-redis.js';
