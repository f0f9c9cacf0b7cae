-- Set one user's bit in a chunk of a day's cohort (Cluster: the check-in's second call).
-- A chunk starts sparse, as a set of offsets (an intset: 4 bytes per user), and becomes a
-- bitmap (up to 128 KiB) only once it holds more than ARGV[3] users, so a sparse user id costs
-- a few bytes, not 128 KiB, and a bitmap costs at least 128 KiB / ARGV[3] per user in it.
-- checkin_set.lua carries the same steps for a single Redis.
-- KEYS[1]  the chunk (ckd:{chunk}:YYYY-MM-DD)
-- ARGV[1]  bit offset within the chunk
-- ARGV[2]  unix time at which the chunk expires
-- ARGV[3]  most users kept sparse
-- Returns  1 when the chunk existed before this call, else 0 (the caller then registers it)
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'string' then
  redis.call('SETBIT', KEYS[1], ARGV[1], 1)
else
  redis.call('SADD', KEYS[1], ARGV[1])
  if redis.call('SCARD', KEYS[1]) > tonumber(ARGV[3]) then
    local users = redis.call('SMEMBERS', KEYS[1])
    redis.call('DEL', KEYS[1])
    for _, u in ipairs(users) do
      redis.call('SETBIT', KEYS[1], u, 1)
    end
  end
end
redis.call('EXPIREAT', KEYS[1], ARGV[2])
if kind == 'none' then return 0 end
return 1
