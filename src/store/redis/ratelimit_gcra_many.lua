-- Several GCRA steps on one bucket in one call, in order, at one instant: exactly what the
-- same steps sent one by one through ratelimit_gcra.lua would decide had they all arrived at
-- that instant. The global limiter sends the requests that queued behind a bucket's call in
-- flight as one batch (src/middleware/ratelimit/batch.rs), so a busy client costs one round
-- trip per batch rather than one per request. No idempotency keys here: the global layer
-- uses none.
-- KEYS[1]  the bucket, as in ratelimit_gcra.lua
-- ARGV[1], ARGV[2]  delay variation tolerance: whole seconds, then the microseconds below
-- ARGV[3 + 2i], ARGV[4 + 2i]  step i's increment (emission interval x quantity), split the
--          same way; 0 0 is a peek
-- Returns  { now, tat_1, ..., tat_n }: the clock and the TAT each step saw (false: none), in
--          microseconds as decimal strings; the caller derives each reply from them
--          (src/ratelimit/logic.rs), as for one step.
local M = 1000000
local key = KEYS[1]
local tol_s, tol_us = tonumber(ARGV[1]), tonumber(ARGV[2])

local clock = redis.call('TIME')
local now_s, now_us = tonumber(clock[1]), tonumber(clock[2])

local raw = redis.pcall('GET', key)
local tat_s, tat_us = now_s, now_us
local stored = false
if type(raw) == 'string' and #raw <= 21 and string.match(raw, '^%d+$') then
  stored = raw
  if #raw > 6 then
    tat_s, tat_us = tonumber(string.sub(raw, 1, -7)), tonumber(string.sub(raw, -6))
  else
    tat_s, tat_us = 0, tonumber(raw)
  end
end

local seen = {}
-- What to leave in the key at the end: nil keeps it as it is.
local final = nil
for i = 3, #ARGV, 2 do
  seen[#seen + 1] = stored
  local inc_s, inc_us = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  local new_s, new_us = now_s, now_us
  if tat_s > now_s or (tat_s == now_s and tat_us > now_us) then
    new_s, new_us = tat_s, tat_us
  end
  new_s, new_us = new_s + inc_s, new_us + inc_us
  if new_us >= M then
    new_s, new_us = new_s + 1, new_us - M
  end
  local ttl_s, ttl_us = new_s - now_s, new_us - now_us
  if ttl_us < 0 then
    ttl_s, ttl_us = ttl_s - 1, ttl_us + M
  end
  local limited = ttl_s > tol_s or (ttl_s == tol_s and ttl_us > tol_us)
  if not limited and (inc_s > 0 or inc_us > 0) then
    local expire_ms = ttl_s * 1000 + math.floor(ttl_us / 1000)
    if expire_ms > 0 then
      stored = string.format('%.0f%06d', new_s, new_us)
      tat_s, tat_us = new_s, new_us
      final = { stored, expire_ms }
    else
      -- As one step would: the key goes, and the next step starts from now.
      stored = false
      tat_s, tat_us = now_s, now_us
      final = false
    end
  end
end

if final then
  redis.call('SET', key, final[1], 'PX', string.format('%.0f', final[2]))
elseif final == false and raw then
  redis.call('DEL', key)
end
local reply = { string.format('%.0f%06d', now_s, now_us) }
for i = 1, #seen do
  reply[i + 1] = seen[i]
end
return reply
