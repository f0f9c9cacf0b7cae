-- Acquire a lock (SET NX PX) with a fencing token, or extend it for its current owner.
-- KEYS[1]  the holder (lk:{name}): "owner\ntoken", expiring with the lease
-- KEYS[2]  the fencing counter (lk:{name}:fence): the last token handed out, expiring
--          ARGV[3] ms after the lease so that it outlives the holder
-- ARGV[1] owner   ARGV[2] ttl, ms   ARGV[3] the counter's grace, ms
-- Returns  { 1, token, expires_at_ms } when acquired or extended (same token),
--          { 0, pttl_ms } when another owner holds it.
--
-- token = max(counter + 1, now in µs) (src/locks/logic.rs next_token): strictly increasing
-- while the counter lives, and past every earlier token by the clock once it has expired.
-- µs since the epoch are exact in a Lua double (< 2^53) until the year 2255.
local ttl, grace = tonumber(ARGV[2]), tonumber(ARGV[3])
local clock = redis.call('TIME')
local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local expires_at = string.format('%.0f', math.floor(now_us / 1000) + ttl)
local held = redis.call('GET', KEYS[1])
if held then
  local owner, token = string.match(held, '^([^\n]*)\n(.*)$')
  if owner ~= ARGV[1] then
    return { 0, redis.call('PTTL', KEYS[1]) }
  end
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('SET', KEYS[2], token, 'PX', ttl + grace)
  return { 1, token, expires_at }
end
local counter = tonumber(redis.call('GET', KEYS[2]) or '') or 0
local token = string.format('%.0f', math.max(counter + 1, now_us))
redis.call('SET', KEYS[1], ARGV[1] .. '\n' .. token, 'PX', ttl)
redis.call('SET', KEYS[2], token, 'PX', ttl + grace)
return { 1, token, expires_at }
