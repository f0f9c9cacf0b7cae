-- Ack N claims of one queue, in order, each as if it came alone: an ack holds only while its
-- job is in flight under its receipt and the deadline has not passed; then the job is gone.
-- The acks a gateway worker takes up in one turn come in one call (src/queues/redis/group.rs).
-- ARGV[1] idle expiry ms  ARGV[2i], ARGV[2i+1]  ack i's job id and receipt
-- Returns one reply per ack, in order: 'ok', 'expired', or 'unknown' (no such job, and the
-- queue never issued this receipt)
local now = now_ms()
local n = (#ARGV - 1) / 2
local issued
-- Jobs acked by this run, removed once at the end.
local gone, done = {}, {}
local replies = {}
for i = 1, n do
  local id, receipt = ARGV[2 * i], ARGV[2 * i + 1]
  local meta = not gone[id] and redis.call('HGET', KEYS[3], id)
  if not meta then
    -- A job acked or cancelled is gone like one never enqueued; its receipt tells them apart:
    -- the queue issued every receipt up to its sequence, so a higher one was never a claim's.
    issued = issued or tonumber(redis.call('HGET', KEYS[6], 'receipt') or '0')
    local seq = tonumber(string.match(receipt, '%.(%d+)$'))
    if seq < 1 or seq > issued then
      replies[i] = 'unknown'
    else
      replies[i] = 'expired'
    end
  else
    local deadline = redis.call('ZSCORE', KEYS[2], id)
    if not deadline or tonumber(deadline) <= now or string.match(meta, '(%S+)$') ~= receipt then
      replies[i] = 'expired'
    else
      gone[id] = true
      done[#done + 1] = id
      replies[i] = 'ok'
    end
  end
end
if #done > 0 then
  redis.call('ZREM', KEYS[2], unpack(done))
  redis.call('HDEL', KEYS[3], unpack(done))
  redis.call('HDEL', KEYS[4], unpack(done))
  touch(now, tonumber(ARGV[1]))
end
return replies
