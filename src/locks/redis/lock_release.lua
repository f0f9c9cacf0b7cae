-- Release each of N locks, only by its holder (compare-and-set), in order, and announce each
-- release to the lock's waiters. The releases a gateway worker takes up in one turn come in one
-- call (src/locks/redis/group.rs): every key and channel of the call in one slot on a Cluster.
-- KEYS[i]  release i's lock (lk:{name}, "<lease deadline, ms> <token> <owner>": see
--          lock_acquire.lua)
-- ARGV[1]  the releasing gateway's origin, which each announcement carries (that gateway tells
--          its own waiters directly and skips its announcements when it hears them back)
-- ARGV[3i-1] release i's owner   ARGV[3i] its token   ARGV[3i+1] its lock's sharded release
--          channel (lk:{name}:released, the same slot as KEYS[i])
-- Returns  one 1 (released) or 0 (not held by them: another owner or token, or the lease
--          ended) per release, in order.
--
-- A released lock keeps its token, the name's fencing counter, as "0 <token> " with the key's
-- expiry (the lease's end plus the grace): the next acquisition's token follows it. A key in
-- the layout before ("owner\ntoken", docs/locks.md "Key layout") is deleted, as then: its
-- counter is lk:{name}:fence, which stays.
local now_ms
local replies = {}
for i = 1, #KEYS do
  local key, owner, token = KEYS[i], ARGV[3 * i - 1], ARGV[3 * i]
  local value = redis.call('GET', key)
  replies[i] = 0
  if value then
    local deadline, held, by = string.match(value, '^(%d+) (%d+) (.*)$')
    if deadline then
      if held == token and by == owner then
        -- The clock, read once per call and only when needed: a release by someone who does
        -- not hold the lock (the commonest refusal) costs the GET alone.
        if not now_ms then
          local clock = redis.call('TIME')
          now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        end
        if tonumber(deadline) > now_ms then
          redis.call('SET', key, '0 ' .. token .. ' ', 'KEEPTTL')
          replies[i] = 1
        end
      end
    elseif value == owner .. '\n' .. token then
      redis.call('DEL', key)
      replies[i] = 1
    end
    if replies[i] == 1 then
      redis.call('SPUBLISH', ARGV[3 * i + 1], ARGV[1])
    end
  end
end
return replies
