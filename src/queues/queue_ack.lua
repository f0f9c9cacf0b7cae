-- Ack a claim: only while the job is in flight under this receipt and its deadline has not
-- passed; then the job is gone.
-- ARGV[1] id  ARGV[2] receipt  ARGV[3] idle expiry ms
-- Returns 'ok' or 'expired'
local now = now_ms()
local deadline = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not deadline or tonumber(deadline) <= now then
  return 'expired'
end
local meta = redis.call('HGET', KEYS[3], ARGV[1])
if not meta or string.match(meta, '(%S+)$') ~= ARGV[2] then
  return 'expired'
end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
touch(now, tonumber(ARGV[3]))
return 'ok'
