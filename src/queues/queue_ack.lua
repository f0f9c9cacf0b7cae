-- Ack a claim: only while the job is in flight under this receipt and its deadline has not
-- passed; then the job is gone.
-- ARGV[1] id  ARGV[2] receipt  ARGV[3] idle expiry ms
-- Returns 'ok', 'expired', or 'unknown' (no such job, and the queue never issued this receipt)
local now = now_ms()
local meta = redis.call('HGET', KEYS[3], ARGV[1])
if not meta then
  -- A job acked or cancelled is gone like one never enqueued; its receipt tells them apart:
  -- the queue issued every receipt up to its sequence, so a higher one was never a claim's.
  local issued = tonumber(redis.call('HGET', KEYS[6], 'receipt') or '0')
  local seq = tonumber(string.match(ARGV[2], '%.(%d+)$'))
  if seq < 1 or seq > issued then
    return 'unknown'
  end
  return 'expired'
end
local deadline = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not deadline or tonumber(deadline) <= now or string.match(meta, '(%S+)$') ~= ARGV[2] then
  return 'expired'
end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
touch(now, tonumber(ARGV[3]))
return 'ok'
