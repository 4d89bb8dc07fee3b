// Internal: the Lua scripts of the Redis conversation store, each one atomic round trip.
import { script } from '../_redis.js';

/**
 * Drops at most 32 expired ids from the live index (KEYS[3]; ARGV[1] of the caller's "now" is passed as `now`): each
 * write prunes a little, so the index stays near the live set without a sweep, and no write does unbounded work.
 */
const PRUNE = (now: string) => `
local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ${now}, 'LIMIT', 0, 32)
if #due > 0 then redis.call('ZREM', KEYS[3], unpack(due)) end
`;

/** KEYS: record, tombstone, index. ARGV: json, px, id, expiresAt, now. */
export const CREATE = script(`
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
${PRUNE('ARGV[5]')}
return 1
`);

/** KEYS: record, tombstone, index. ARGV: id, tombstonePx, now. 1 when the conversation was live. */
export const DELETE = script(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local score = redis.call('ZSCORE', KEYS[3], ARGV[1])
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('SET', KEYS[2], '1', 'PX', ARGV[2]) end
if score and tonumber(score) > tonumber(ARGV[3]) then return 1 end
return 0
`);

/**
 * Takes the lock and reads the record in one round trip. KEYS: lock, record, tombstone. ARGV: token, px.
 * {1, json} = locked; {0} = busy; {2, tombstone exists} = no record (nothing locked).
 */
export const ACQUIRE = script(`
local raw = redis.call('GET', KEYS[2])
if not raw then return {2, redis.call('EXISTS', KEYS[3])} end
if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return {1, raw} end
return {0}
`);

/**
 * Saves the record under the lock, then releases it, in one round trip. KEYS: record, tombstone, index, lock.
 * ARGV: token, json, px, id, expiresAt, now. 0 = lock lost, 2 = deleted meanwhile.
 */
export const SAVE_AND_RELEASE = script(`
if redis.call('GET', KEYS[4]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[4])
if redis.call('EXISTS', KEYS[1]) == 0 then return 2 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[4])
${PRUNE('ARGV[6]')}
return 1
`);

/** KEYS: lock. ARGV: token, px. */
export const RENEW = script(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`);

/** KEYS: lock. ARGV: token. */
export const RELEASE = script(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`);
