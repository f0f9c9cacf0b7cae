-- Renew a lock still held by this owner and token: a new lease from now, and the key (with the
-- token, the name's fencing counter) keeps outliving it by the grace.
-- KEYS[1] the lock (lk:{name}, "<lease deadline, ms> <token> <owner>": see lock_acquire.lua)
-- ARGV[1] owner   ARGV[2] token   ARGV[3] ttl, ms   ARGV[4] the counter's grace, ms
-- Returns  { 1, expires_at_ms } when renewed, { 0 } when not held by them.
-- A key in the layout before ("owner\ntoken", expiring with the lease; docs/locks.md "Key
-- layout") held by them is rewritten in this one.
local value = redis.call('GET', KEYS[1])
if not value then
  return { 0 }
end
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local deadline, token, by = string.match(value, '^(%d+) (%d+) (.*)$')
if deadline then
  if token ~= ARGV[2] or by ~= ARGV[1] or tonumber(deadline) <= now_ms then
    return { 0 }
  end
elseif value ~= ARGV[1] .. '\n' .. ARGV[2] then
  return { 0 }
end
local ttl, grace = tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('SET', KEYS[1], (now_ms + ttl) .. ' ' .. ARGV[2] .. ' ' .. ARGV[1], 'PX', ttl + grace)
return { 1, now_ms + ttl }
