-- Raw reference for the lock release row: the classic compare-and-delete (release only if the
-- key still holds our value), as one script.
-- KEYS[1] the lock   ARGV[1] the holder's value
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
