-- The limiter's runtime overrides and their version, read at one instant.
-- KEYS[1]  the overrides hash; KEYS[2]  the version counter
-- Returns  { version, field_1, value_1, ... }
local out = { redis.call('GET', KEYS[2]) or '0' }
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all do
  out[i + 1] = all[i]
end
return out
