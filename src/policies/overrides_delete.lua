-- Removes one runtime override of the limiter and, when there was one, moves the version on.
-- KEYS[1]  the overrides hash; KEYS[2]  the version counter
-- ARGV[1]  the field
-- Returns  1 when it was there, else 0
if redis.call('HDEL', KEYS[1], ARGV[1]) == 1 then
  redis.call('INCR', KEYS[2])
  return 1
end
return 0
