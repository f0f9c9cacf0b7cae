-- Set one user's bit in a chunk of a day's cohort: a check-in's second call on a Cluster, in
-- the chunk's slot (follows checkin_common.lua: cohort() says how a chunk is kept). The
-- caller registers the chunk (the registry is in another slot).
-- KEYS[1]  the chunk (ckd:{chunk}:YYYY-MM-DD)
-- ARGV[1]  bit offset within the chunk
-- ARGV[2]  unix time at which the chunk expires
-- ARGV[3]  most users kept sparse
-- Returns  1 when the chunk existed before this call, else 0 (the caller then registers it)
if cohort({}, KEYS[1], false, ARGV[1], ARGV[2], 0, tonumber(ARGV[3])) then
  return 1
end
return 0
