-- Release each of N locks, only by its holder (compare-and-delete), in order, and announce each
-- release to the lock's waiters. The releases a gateway worker takes up in one turn come in one
-- call (src/locks/redis.rs): every key and channel of the call in one slot on a Cluster.
-- KEYS[i]  release i's holder (lk:{name})
-- ARGV[1]  the releasing gateway's origin, which each announcement carries (that gateway tells
--          its own waiters directly and skips its announcements when it hears them back)
-- ARGV[3i-1] release i's owner   ARGV[3i] its token   ARGV[3i+1] its lock's sharded release
--          channel (lk:{name}:released, the same slot as KEYS[i])
-- Returns  one 1 (released) or 0 (not held by them) per release, in order. The fencing
--          counter stays.
local replies = {}
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[3 * i - 1] .. '\n' .. ARGV[3 * i] then
    redis.call('DEL', KEYS[i])
    redis.call('SPUBLISH', ARGV[3 * i + 1], ARGV[1])
    replies[i] = 1
  else
    replies[i] = 0
  end
end
return replies
