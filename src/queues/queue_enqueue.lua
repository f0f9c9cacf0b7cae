-- Enqueue one job unless its id exists or the queue is full; under an idempotency key, the
-- lookup of the key's first outcome and the record of this one happen in the same step.
-- KEYS[7]  q:{queue}:idem:<sha256 of the key>: "fingerprint\n<tag> <run_at> <id>"; only read or
--          written when ARGV[7] is not empty
-- ARGV[1] id  ARGV[2] payload  ARGV[3] delay ms or ''  ARGV[4] run_at ms (when no delay)
-- ARGV[5] max_attempts  ARGV[6] most live jobs  ARGV[7] fingerprint or ''  ARGV[8] record TTL s
-- ARGV[9] idle expiry ms  ARGV[10] the queue's pub/sub channel, told of each new job
-- ARGV[11] the enqueuing gateway's origin, which the announcement carries
-- Returns {'created', run_at, id, due_in} (due_in: ms from now until run_at, at least 0),
--         {'existing', run_at, id}, {'full'} (nothing changed and nothing recorded),
--         {'replay', tag, run_at, id} or {'key_reused'}
local fp = ARGV[7]
if fp ~= '' then
  local first = redis.call('GET', KEYS[7])
  if first then
    local ffp, tag, run_at, id = string.match(first, '^([^\n]*)\n(%S+) (%S+) (%S+)$')
    if ffp ~= fp then
      return { 'key_reused' }
    end
    return { 'replay', tag, run_at, id }
  end
end

local function answer(tag, run_at)
  if fp ~= '' then
    redis.call('SET', KEYS[7], fp .. '\n' .. tag .. ' ' .. run_at .. ' ' .. ARGV[1], 'EX', ARGV[8])
  end
  return { tag, run_at, ARGV[1] }
end

local meta = redis.call('HGET', KEYS[3], ARGV[1])
if meta then
  return answer('existing', string.match(meta, '^(%S+)'))
end
if redis.call('HLEN', KEYS[4]) - redis.call('ZCARD', KEYS[5]) >= tonumber(ARGV[6]) then
  return { 'full' }
end
local now = now_ms()
local run_at
if ARGV[3] ~= '' then
  run_at = now + tonumber(ARGV[3])
else
  run_at = tonumber(ARGV[4])
end
redis.call('HSET', KEYS[4], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[1], int(run_at) .. ' 0 ' .. ARGV[5] .. ' -')
redis.call('ZADD', KEYS[1], int(run_at), ARGV[1])
touch(now, tonumber(ARGV[9]))
-- Tells every gateway instance's waiting claims: '<origin> <due in ms>', so that each wakes
-- one of them for a job due now and none for a later one (they look at its due time).
local due_in = int(math.max(0, run_at - now))
redis.call('PUBLISH', ARGV[10], ARGV[11] .. ' ' .. due_in)
local reply = answer('created', int(run_at))
reply[4] = due_in
return reply
