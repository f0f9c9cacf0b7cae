-- Who holds a lock, and until when (one step, so the holder and its expiry agree).
-- KEYS[1] the holder
-- Returns { "owner\ntoken", expires_at_ms } or {} when free.
local held = redis.call('GET', KEYS[1])
if not held then
  return {}
end
local pttl = redis.call('PTTL', KEYS[1])
local clock = redis.call('TIME')
return { held, string.format('%.0f', tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000) + pttl) }
