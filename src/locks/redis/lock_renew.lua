-- Renew each of N locks still held by its owner and token, in order, each as if it ran alone:
-- a new lease from now, and the key (with the token, the name's fencing counter) keeps
-- outliving it by the grace. The renewals a gateway worker takes up in one turn come in one
-- call (src/locks/redis/group.rs): every key of the call in one slot on a Cluster, any keys on a
-- single Redis. Two renewals of one lease in a call both renew it, the later one's lease last.
-- KEYS[i]  renewal i's lock (lk:{name}, "<lease deadline, ms> <token> <owner>": see
--          lock_acquire.lua)
-- ARGV[1]  the counter's grace, ms
-- ARGV[3i-1] renewal i's owner   ARGV[3i] its token   ARGV[3i+1] its ttl, ms
-- Returns  { now_ms, r1, ..., rN }: ri is 1 when renewed (its lease then ends at now_ms + its
--          ttl), 0 when not held by them (another owner or token, or the lease ended). now_ms
--          is -1 when no renewal found a value to compare, so the clock was not read.
-- A key in the layout before ("owner\ntoken", expiring with the lease; docs/locks.md "Key
-- layout") held by them is rewritten in this one.
local grace = tonumber(ARGV[1])
local now_ms
local replies = { -1 }
for i = 1, #KEYS do
  local key, owner, token = KEYS[i], ARGV[3 * i - 1], ARGV[3 * i]
  local value = redis.call('GET', key)
  local held = false
  if value then
    -- The clock, read once per call and only when a renewal has a lease to compare.
    if not now_ms then
      local clock = redis.call('TIME')
      now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
      replies[1] = now_ms
    end
    local deadline, last, by = string.match(value, '^(%d+) (%d+) (.*)$')
    if deadline then
      held = last == token and by == owner and tonumber(deadline) > now_ms
    else
      held = value == owner .. '\n' .. token
    end
  end
  if held then
    local ttl = tonumber(ARGV[3 * i + 1])
    redis.call('SET', key, (now_ms + ttl) .. ' ' .. token .. ' ' .. owner, 'PX', ttl + grace)
    replies[i + 1] = 1
  else
    replies[i + 1] = 0
  end
end
return replies
