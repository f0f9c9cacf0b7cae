-- Enqueue N jobs into one queue, in order, each as if it came alone: a job is added unless its
-- id exists or the queue is full (live jobs counted across the run, in order); under an
-- idempotency key, the lookup of the key's first outcome and the record of this one happen in
-- the same step, so a replay later in the run answers the earlier job's reply. The enqueues a
-- gateway worker takes up in one turn come in one call (src/queues/redis.rs): one script run,
-- one clock read, one expiry refresh and one announcement for a burst on one queue.
-- KEYS[1..6] the queue's keys (queue_common.lua)
-- KEYS[6+k]  the idempotency record of the k-th job of the call that has a fingerprint:
--            q:{queue}:idem:<sha256 of the key>, "fingerprint\n<tag> <run_at> <id>"
-- ARGV[1] most live jobs  ARGV[2] record TTL s  ARGV[3] idle expiry ms
-- ARGV[4] the queue's pub/sub channel, told of new jobs
-- ARGV[5] the enqueuing gateway's origin, which the announcement carries
-- ARGV[6i], ..., ARGV[6i+5]  job i: id, payload, delay ms or '', run_at ms (when no delay),
--            max_attempts, fingerprint or ''
-- Returns one reply per job, in order:
--         {'created', run_at, id, due_in} (due_in: ms from now until run_at, at least 0),
--         {'existing', run_at, id}, {'full'} (nothing changed and nothing recorded),
--         {'replay', tag, run_at, id} or {'key_reused'}
local max_jobs, ttl = tonumber(ARGV[1]), ARGV[2]
local n = (#ARGV - 5) / 6
local now, live, earliest
-- Jobs made by this run (id -> run_at), and the writes they make, sent once at the end.
local made, pay, meta, due = {}, {}, {}, {}
local replies = {}
local idem_at = 6
for i = 1, n do
  local a = 6 * i
  local id, fp = ARGV[a], ARGV[a + 5]
  local reply, idem
  if fp ~= '' then
    idem_at = idem_at + 1
    idem = KEYS[idem_at]
    local first = redis.call('GET', idem)
    if first then
      local ffp, tag, run_at, fid = string.match(first, '^([^\n]*)\n(%S+) (%S+) (%S+)$')
      if ffp ~= fp then
        reply = { 'key_reused' }
      else
        reply = { 'replay', tag, run_at, fid }
      end
    end
  end
  if not reply then
    local tag, run_at, due_in
    local known = made[id]
    if not known then
      local m = redis.call('HGET', KEYS[3], id)
      known = m and string.match(m, '^(%S+)')
    end
    if known then
      tag, run_at = 'existing', known
    else
      if not live then
        live = redis.call('HLEN', KEYS[4]) - redis.call('ZCARD', KEYS[5])
      end
      if live < max_jobs then
        now = now or now_ms()
        local at
        if ARGV[a + 2] ~= '' then
          at = now + tonumber(ARGV[a + 2])
        else
          at = tonumber(ARGV[a + 3])
        end
        tag, run_at = 'created', int(at)
        local wait = math.max(0, at - now)
        due_in = int(wait)
        if not earliest or wait < earliest then
          earliest = wait
        end
        pay[#pay + 1], pay[#pay + 2] = id, ARGV[a + 1]
        meta[#meta + 1], meta[#meta + 2] = id, run_at .. ' 0 ' .. ARGV[a + 4] .. ' -'
        due[#due + 1], due[#due + 2] = run_at, id
        made[id] = run_at
        live = live + 1
      end
    end
    if tag then
      if idem then
        redis.call('SET', idem, fp .. '\n' .. tag .. ' ' .. run_at .. ' ' .. id, 'EX', ttl)
      end
      reply = { tag, run_at, id, due_in }
    else
      reply = { 'full' }
    end
  end
  replies[i] = reply
end

if #due > 0 then
  redis.call('HSET', KEYS[4], unpack(pay))
  redis.call('HSET', KEYS[3], unpack(meta))
  redis.call('ZADD', KEYS[1], unpack(due))
  touch(now, tonumber(ARGV[3]))
  -- Tells every gateway instance's waiting claims: '<origin> <due in ms>' of the run's
  -- earliest job, so that each wakes one of them for a job due now and none for a later one;
  -- the look it makes sees the run's other jobs (their due times set its alarm, and jobs left
  -- due make another claim look at once: see claim_waiting in src/queues/mod.rs).
  redis.call('PUBLISH', ARGV[4], ARGV[5] .. ' ' .. int(earliest))
end
return replies
