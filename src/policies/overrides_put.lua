-- Sets one runtime override of the limiter (docs/policies.md "Overrides and denies") and moves
-- the version on, so every gateway instance reloads the set within a poll.
-- KEYS[1]  the overrides hash (field → "<expires_at ms or 0>|<json>")
-- KEYS[2]  the version counter (same hash tag)
-- ARGV[1], ARGV[2]  field, value
-- ARGV[3]  the most entries the hash may hold; expired entries are dropped before refusing
-- Returns  "created", "replaced" or "full"
local exists = redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1
if not exists and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then
  local t = redis.call('TIME')
  local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    local at = tonumber(string.match(all[i + 1], '^(%d+)|'))
    if at and at > 0 and at <= now_ms then
      redis.call('HDEL', KEYS[1], all[i])
    end
  end
  if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then
    return 'full'
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('INCR', KEYS[2])
if exists then
  return 'replaced'
end
return 'created'
