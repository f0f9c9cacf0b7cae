-- Acquire each of N locks (SET NX PX) with a fencing token, or extend it for its current owner,
-- in order, each as if it ran alone: several acquisitions of one name in a call answer as one
-- after the other would (the first free one takes it, another owner then finds it held, the
-- same owner again extends it with the same token). The acquisitions a gateway worker takes up
-- in one turn come in one call (src/locks/redis.rs): every key of the call in one slot on a
-- Cluster, any keys on a single Redis.
-- KEYS[2i-1]  acquisition i's holder (lk:{name}): "owner\ntoken", expiring with the lease
-- KEYS[2i]    its fencing counter (lk:{name}:fence): the last token handed out, expiring
--             ARGV[1] ms after the lease so that it outlives the holder
-- ARGV[1] the counter's grace, ms   ARGV[2i] acquisition i's owner   ARGV[2i+1] its ttl, ms
-- Returns  one reply per acquisition, in order, each
--          { 1, token, expires_at_ms } when acquired or extended (same token),
--          { 0, pttl_ms } when another owner holds it.
--
-- token = max(counter + 1, now in µs) (src/locks/logic.rs next_token): strictly increasing
-- while the counter lives, and past every earlier token by the clock once it has expired.
-- µs since the epoch are exact in a Lua double (< 2^53) until the year 2255. One clock read
-- serves the call: a later acquisition of the same name in it follows the counter.
local grace = tonumber(ARGV[1])
local clock = redis.call('TIME')
local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local now_ms = math.floor(now_us / 1000)
local replies = {}
for i = 1, #KEYS / 2 do
  local holder, fence = KEYS[2 * i - 1], KEYS[2 * i]
  local owner, ttl = ARGV[2 * i], tonumber(ARGV[2 * i + 1])
  local expires_at = string.format('%.0f', now_ms + ttl)
  local held = redis.call('GET', holder)
  if held then
    local by, token = string.match(held, '^([^\n]*)\n(.*)$')
    if by ~= owner then
      replies[i] = { 0, redis.call('PTTL', holder) }
    else
      redis.call('PEXPIRE', holder, ttl)
      redis.call('SET', fence, token, 'PX', ttl + grace)
      replies[i] = { 1, token, expires_at }
    end
  else
    local counter = tonumber(redis.call('GET', fence) or '') or 0
    local token = string.format('%.0f', math.max(counter + 1, now_us))
    redis.call('SET', holder, owner .. '\n' .. token, 'PX', ttl)
    redis.call('SET', fence, token, 'PX', ttl + grace)
    replies[i] = { 1, token, expires_at }
  end
end
return replies
