// `agora-agents/faces`: the other protocols an agent speaks (ROAR, OAP, A2A) as mounts of its edge, and their parts.
export * from '../bindings/faces.js';
export { RedisReplayGuard } from '../bindings/roar/replay-redis.js';
