// Internal: the Lua scripts of the Redis conversation store, each one atomic round trip. A script touches the keys
// of one conversation only (one hash tag, one cluster slot); the live index, one key of its own, is written apart.
import { script } from '../_redis.js';

/**
 * Notes a conversation's expiry in the live index (KEYS[1]) and drops at most 32 expired ids: each write prunes a
 * little, so the index stays near the live set without a sweep, and no write does unbounded work.
 * ARGV: id, expiresAt, now.
 */
export const INDEX = script(`
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[3], 'LIMIT', 0, 32)
if #due > 0 then redis.call('ZREM', KEYS[1], unpack(due)) end
return 1
`);

/** KEYS: record. ARGV: json, px. */
export const CREATE = script(
  `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`,
  { durable: true },
);

/**
 * KEYS: record, tombstone. ARGV: tombstonePx, now. 1 when the conversation was live (its record's expiresAt, read
 * here, is after now).
 */
export const DELETE = script(
  `
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local ok, record = pcall(cjson.decode, raw)
redis.call('DEL', KEYS[1])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[1]) then redis.call('SET', KEYS[2], '1', 'PX', ARGV[1]) end
if ok and type(record) == 'table' and tonumber(record.expiresAt) and tonumber(record.expiresAt) > tonumber(ARGV[2])
then return 1 end
return 0
`,
  { durable: true },
);

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
 * Saves the record under the lock, then releases it, in one round trip. KEYS: record, lock. ARGV: token, json, px.
 * 0 = lock lost, 2 = deleted meanwhile.
 */
export const SAVE_AND_RELEASE = script(
  `
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[2])
if redis.call('EXISTS', KEYS[1]) == 0 then return 2 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`,
  { durable: true },
);

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
