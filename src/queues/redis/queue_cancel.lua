-- Cancel a job that is not in flight (waiting, lapsed or dead).
-- ARGV[1] id  ARGV[2] idle expiry ms
-- Returns 'ok', 'not_found' or 'in_flight'
local now = now_ms()
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 0 then
  return 'not_found'
end
local deadline = redis.call('ZSCORE', KEYS[2], ARGV[1])
if deadline and tonumber(deadline) > now then
  return 'in_flight'
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
touch(now, tonumber(ARGV[2]))
-- The gateways streaming the queue's ready jobs (see queue_enqueue.lua).
redis.call('SPUBLISH', string.match(KEYS[1], '^(.*):[^:]*$') .. ':events', '')
return 'ok'
