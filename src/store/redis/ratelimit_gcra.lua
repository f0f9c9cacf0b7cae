-- One GCRA step (RATELIMIT.md): read the clock and the bucket's TAT, write the new TAT if the
-- request fits. The caller derives the whole reply from the two values returned, with the same
-- arithmetic (src/ratelimit/logic.rs); only the comparison that decides the write is repeated here.
-- KEYS[1]  the bucket (rl:{key} or rlg:{client}): its TAT in whole microseconds since the epoch,
--          as a decimal string, expiring when the bucket is full again
-- ARGV[1]  increment: emission interval x quantity, microseconds (0 = peek, never writes)
-- ARGV[2]  delay variation tolerance: emission interval x limit, microseconds
-- Returns  { now, tat }: the clock (TIME, read once) in microseconds and the stored TAT, both as
--          decimal strings; tat is nil when the key is missing or does not hold a number.
-- Numbers are doubles: microsecond timestamps stay exact up to 2^53 (the year 2255).
local key = KEYS[1]
local inc = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])

local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])

-- pcall: a key of another type, like garbage in it, counts as missing and is overwritten.
local raw = redis.pcall('GET', key)
local tat = nil
if type(raw) == 'string' then
  tat = tonumber(raw)
  if tat ~= nil and (tat ~= tat or tat == math.huge or tat == -math.huge) then
    tat = nil
  end
end

local new_tat = math.max(now, tat or now) + inc
if inc > 0 and new_tat - now <= tolerance then
  local expire_ms = math.floor((new_tat - now) / 1000)
  if expire_ms > 0 then
    redis.call('SET', key, string.format('%.0f', new_tat), 'PX', string.format('%.0f', expire_ms))
  elseif raw then
    redis.call('DEL', key)
  end
end

return { string.format('%.0f', now), tat and string.format('%.0f', tat) or false }
