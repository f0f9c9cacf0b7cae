-- Ack N claims of one queue, in order, each as if it came alone: an ack holds only while its
-- job is in flight under its receipt and the deadline has not passed; then the job is gone.
-- Under an idempotency key, an ack that took effect records so, in the same step: its retry
-- (the client never saw the answer) is answered 'ok' again rather than 'expired' by the job
-- it removed. The acks a gateway worker takes up in one turn come in one call
-- (src/queues/redis/group.rs).
-- KEYS[1..6] the queue's keys (queue_common.lua)
-- KEYS[6+k]  the idempotency record of the k-th ack of the call that has a fingerprint:
--            q:{queue}:idem:<sha256 of the key>, "fingerprint\nok"
-- ARGV[1] idle expiry ms  ARGV[2] record TTL s
-- ARGV[3i], ARGV[3i+1], ARGV[3i+2]  ack i's job id, receipt, and fingerprint or ''
-- Returns one reply per ack, in order: 'ok', 'expired', 'unknown' (no such job, and the queue
-- never issued this receipt), 'replay' (the key's ack took effect before) or 'key_reused'
local now = now_ms()
local ttl = ARGV[2]
local n = (#ARGV - 2) / 3
local issued
-- Jobs acked by this run, removed once at the end.
local gone, done = {}, {}
local replies = {}
local idem_at = 6
for i = 1, n do
  local id, receipt, fp = ARGV[3 * i], ARGV[3 * i + 1], ARGV[3 * i + 2]
  local idem, first
  if fp ~= '' then
    idem_at = idem_at + 1
    idem = KEYS[idem_at]
    first = redis.call('GET', idem)
  end
  if first then
    -- Only an ack that took effect is recorded: one refused changed nothing, and its retry
    -- is refused again by the same rule.
    if first == fp .. '\nok' then
      replies[i] = 'replay'
    else
      replies[i] = 'key_reused'
    end
  else
    local meta = not gone[id] and redis.call('HGET', KEYS[3], id)
    if not meta then
      -- A job acked or cancelled is gone like one never enqueued; its receipt tells them
      -- apart: the queue issued every receipt up to its sequence, so a higher one was never a
      -- claim's.
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
        if idem then
          redis.call('SET', idem, fp .. '\nok', 'EX', ttl)
        end
      end
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
