// The Lua scripts of the Redis hub store (./redis-store.ts) and of the rooms' (./rooms/redis-store.ts): each a
// check and a write in one step, so several hub processes sharing one Redis never both take the last place.
import { script } from '../_redis.js';
import { CHANGES_KEPT } from './store.js';

// Every write of an agent or a document moves the version and notes the record's id in a sorted set scored by that
// version (KEYS[changes], KEYS[floor]): one entry per record, its latest change, so other processes read what
// changed since the version they hold. Past CHANGES_KEPT entries the oldest are dropped and the floor says up to
// which version changes may be missing (a process that far behind reads everything again).
function noteChange(changes: number, floor: number, id: string): string {
  return `
local version = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[${changes}], version, ${id})
local extra = redis.call('ZCARD', KEYS[${changes}]) - ${CHANGES_KEPT}
if extra > 0 then
  local last = redis.call('ZRANGE', KEYS[${changes}], extra - 1, extra - 1, 'WITHSCORES')
  redis.call('SET', KEYS[${floor}], last[2])
  redis.call('ZREMRANGEBYRANK', KEYS[${changes}], 0, extra - 1)
end`;
}

// The cap is checked and the record written in one step, so two hub processes cannot both take the last place.
export const PUT_CAPPED = script(
  `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 or redis.call('HLEN', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])${noteChange(3, 4, 'ARGV[1]')}
  return 1
end
return 0`,
  { durable: true },
);

// A checkpoint's bytes are counted as it is written or deleted, so the total is read without reading the runs.
export const PUT_RUN = script(
  `
local old = redis.call('HSTRLEN', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('INCRBY', KEYS[2], string.len(ARGV[2]) - old)
return 1`,
  { durable: true },
);

export const DELETE_RUN = script(
  `
local old = redis.call('HSTRLEN', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[1], ARGV[1])
if old > 0 then redis.call('DECRBY', KEYS[2], old) end
return 1`,
  { durable: true },
);

// KEYS: documents, version, changes, floor, texts.
export const PUT_DOCUMENT = script(
  `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 2 end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[5], ARGV[1], ARGV[3])${noteChange(3, 4, 'ARGV[1]')}
return 1`,
  { durable: true },
);

export const DELETE_AGENT = script(
  `
local removed = redis.call('HDEL', KEYS[1], ARGV[1])
if removed == 1 then${noteChange(3, 4, 'ARGV[1]')}
end
return removed`,
  { durable: true },
);

/** Takes or renews a lease (KEYS[1]) for an owner (ARGV[1]) for ARGV[2] ms: 1, or 0 while another owner holds it. */
export const CLAIM = script(`
local owner = redis.call('GET', KEYS[1])
if owner == false or owner == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0`);

/** Gives a lease (KEYS[1]) up, only for its owner (ARGV[1]). */
export const RELEASE = script(`
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0`);
