-- Read one chunk of a day's cohort in whichever form it has (see cohort_set.lua).
-- KEYS[1]  the chunk (ckd:{chunk}:YYYY-MM-DD)
-- Returns  { 0, bitmap } for a bitmap, { 1, offset, offset, ... } for a sparse chunk, { 1 } when
--          the chunk does not exist
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'string' then
  return { 0, redis.call('GET', KEYS[1]) }
end
if kind == 'set' then
  local reply = redis.call('SMEMBERS', KEYS[1])
  table.insert(reply, 1, 1)
  return reply
end
return { 1 }
