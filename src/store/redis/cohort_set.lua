-- Set one user's bit in a chunk of a day's cohort bitmap.
-- KEYS[1]  the chunk (ckd:{chunk}:YYYY-MM-DD)
-- ARGV[1]  bit offset within the chunk
-- ARGV[2]  unix time at which the chunk expires
-- Returns  1 when the chunk existed before this call, else 0 (the caller then registers it)
local existed = redis.call('EXISTS', KEYS[1])
redis.call('SETBIT', KEYS[1], ARGV[1], 1)
redis.call('EXPIREAT', KEYS[1], ARGV[2])
return existed
