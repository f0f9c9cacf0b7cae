-- Who holds a lock, and until when (one step, so the holder and its lease agree).
-- KEYS[1] the lock (lk:{name}, "<lease deadline, ms> <token> <owner>": see lock_acquire.lua)
-- Returns { expires_at_ms, owner, token } while held, {} when free (no key, or its lease over:
-- the key then only keeps the fencing counter). A key in the layout before ("owner\ntoken",
-- expiring with the lease; docs/locks.md "Key layout") is held until it expires.
local value = redis.call('GET', KEYS[1])
if not value then
  return {}
end
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local deadline, token, by = string.match(value, '^(%d+) (%d+) (.*)$')
if deadline then
  if tonumber(deadline) <= now_ms then
    return {}
  end
  return { tonumber(deadline), by, token }
end
by, token = string.match(value, '^([^\n]*)\n(%d+)$')
return { now_ms + redis.call('PTTL', KEYS[1]), by, token }
