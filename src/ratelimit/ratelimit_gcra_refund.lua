-- Gives back what ratelimit_gcra_all.lua spent in one Cluster slot when the same request was
-- then refused in another slot (docs/policies.md "On a Cluster"). Follows gcra_common.lua.
-- Each bucket's TAT moves back by the increment it was charged; a TAT that falls to the clock
-- or behind it is a full bucket, and its key goes.
-- KEYS[i]  a bucket
-- ARGV[2i - 1], ARGV[2i]  the increment bucket i was charged: seconds, then µs
-- Returns  the number of buckets given back to
local now_s, now_us = clock()
local given = 0
for i, key in ipairs(KEYS) do
  local _, stored, tat_s, tat_us = read_tat(key, now_s, now_us)
  if stored then
    local s, us = tat_s - tonumber(ARGV[2 * i - 1]), tat_us - tonumber(ARGV[2 * i])
    if us < 0 then
      s, us = s - 1, us + M
    end
    local ttl_s, ttl_us = s - now_s, us - now_us
    if ttl_us < 0 then
      ttl_s, ttl_us = ttl_s - 1, ttl_us + M
    end
    local ms = ttl_s * 1000 + math.floor(ttl_us / 1000)
    if ms > 0 then
      redis.call('SET', key, tat_text(s, us), 'PX', string.format('%.0f', ms))
    else
      redis.call('DEL', key)
    end
    given = given + 1
  end
end
return given
