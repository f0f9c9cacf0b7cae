-- Release a lock, only by its holder (compare-and-delete), and announce it to waiters.
-- KEYS[1] the holder   ARGV[1] owner   ARGV[2] token
-- ARGV[3] the lock's sharded release channel (lk:{name}:released, the same slot as KEYS[1])
-- ARGV[4] the releasing gateway's origin, which the announcement carries (that gateway tells
--         its own waiters directly and skips its announcement when it hears it back)
-- Returns 1 when released, 0 when not held by them. The fencing counter stays.
if redis.call('GET', KEYS[1]) ~= ARGV[1] .. '\n' .. ARGV[2] then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('SPUBLISH', ARGV[3], ARGV[4])
return 1
