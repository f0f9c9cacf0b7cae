-- Enqueue N jobs into one queue, in order, each as if it came alone: a job is added unless its
-- id exists or the queue is full (live jobs counted across the run, in order); under an
-- idempotency key, the lookup of the key's first outcome and the record of this one happen in
-- the same step, so a replay later in the run answers the earlier job's reply. The enqueues a
-- gateway worker takes up in one turn come in one call (src/queues/redis/group.rs): one script run,
-- one clock read, at most one expiry refresh and one announcement for a burst on one queue.
-- KEYS[1..6] the queue's keys (queue_common.lua)
-- KEYS[6+k]  the idempotency record of the k-th job of the call that has a fingerprint:
--            q:{queue}:idem:<sha256 of the key>, "fingerprint\n<tag> <run_at> <id>"
-- ARGV[1] most live jobs  ARGV[2] record TTL s  ARGV[3] idle expiry ms
-- ARGV[4] expiry slack ms (what a refresh sets beyond the idle expiry; see the end)
-- ARGV[5] the queue's pub/sub channel, told of new jobs
-- ARGV[6] the enqueuing gateway's origin, which the announcement carries
-- ARGV[6i+1], ..., ARGV[6i+6]  job i: id, payload, due ('<delay ms>' or '@<run_at ms>'),
--            max_attempts, fingerprint or '', and '1' when the gateway made the id, else ''
--            (the gateway alone decides it: see made_id in src/queues/mod.rs)
-- Returns one flat array: the store's now in ms (-1 when no job was created, so the clock was
-- not read), then per job, in order, one of
--         'created', run_at          (its due_in is max(0, run_at - now))
--         'existing', run_at
--         'full'                     (nothing changed and nothing recorded)
--         'replay', tag, run_at, id  (the first outcome under the job's key)
--         'key_reused'
local max_jobs, ttl = tonumber(ARGV[1]), ARGV[2]
local n = (#ARGV - 6) / 6
local sub, match = string.sub, string.match
local now, live, earliest, latest
-- The last due time and its text (what meta, due and the reply take): the jobs of a run due
-- now share one, printed once.
local last_at, last_text
-- Jobs made by this run (id -> run_at), and the writes they make (np values each), sent once
-- at the end.
local made, pay, meta, due, np = {}, {}, {}, {}, 0
local replies, nr = { false }, 1
local idem_at = 6
for i = 1, n do
  local a = 6 * i + 1
  local id, fp = ARGV[a], ARGV[a + 4]
  local idem
  local done = false
  if fp ~= '' then
    idem_at = idem_at + 1
    idem = KEYS[idem_at]
    local first = redis.call('GET', idem)
    if first then
      local ffp, tag, run_at, fid = match(first, '^([^\n]*)\n(%S+) (%S+) (%S+)$')
      if ffp ~= fp then
        replies[nr + 1] = 'key_reused'
        nr = nr + 1
      else
        replies[nr + 1], replies[nr + 2], replies[nr + 3], replies[nr + 4] = 'replay', tag, run_at, fid
        nr = nr + 4
      end
      done = true
    end
  end
  if not done then
    local tag, run_at
    local known = made[id]
    -- An id the gateway made was never held by any job: no lookup (why it cannot be one a
    -- client gave, or one made before: made_id in src/queues/mod.rs).
    if not known and ARGV[a + 5] == '' then
      local m = redis.call('HGET', KEYS[3], id)
      known = m and match(m, '^(%S+)')
    end
    if known then
      tag, run_at = 'existing', known
    else
      if not live then
        live = redis.call('HLEN', KEYS[4]) - redis.call('ZCARD', KEYS[5])
      end
      if live < max_jobs then
        now = now or now_ms()
        local when = ARGV[a + 2]
        local at = tonumber(when)
        if at then
          at = now + at
        else
          at = tonumber(sub(when, 2))
        end
        if at ~= last_at then
          -- Due times are whole ms below 10^14 (a year past now at most), which Lua prints
          -- whole ('%.14g'), as int() would.
          last_at, last_text = at, at .. ''
          if not earliest or at < earliest then
            earliest = at
          end
          if not latest or at > latest then
            latest = at
          end
        end
        tag, run_at = 'created', last_text
        pay[np + 1], pay[np + 2] = id, ARGV[a + 1]
        meta[np + 1], meta[np + 2] = id, last_text .. ' 0 ' .. ARGV[a + 3] .. ' -'
        due[np + 1], due[np + 2] = last_text, id
        np = np + 2
        made[id] = last_text
        live = live + 1
      end
    end
    if tag then
      if idem then
        redis.call('SET', idem, fp .. '\n' .. tag .. ' ' .. run_at .. ' ' .. id, 'EX', ttl)
      end
      replies[nr + 1], replies[nr + 2] = tag, run_at
      nr = nr + 2
    else
      replies[nr + 1] = 'full'
      nr = nr + 1
    end
  end
end

if np > 0 then
  redis.call('HSET', KEYS[4], unpack(pay))
  redis.call('HSET', KEYS[3], unpack(meta))
  redis.call('ZADD', KEYS[1], unpack(due))
  -- The expiry refresh (touch) only when this run needs one. What holds after every script
  -- that writes a queue's keys: the six keys that exist share one expiry E (one touch sets
  -- them all, and every script that writes ends with one, so no key is left with another),
  -- and E is at least the idle expiry past the later of that write and every due time and
  -- deadline they hold. So flight, dead and ctr never expire before the jobs they track (in
  -- meta and pay), and no job before it is due. This run adds jobs to due, meta and pay only:
  -- the deadlines in flight and the due times already held are under E as they were, so the
  -- rule still holds without a touch when E reaches the idle expiry past both now and the
  -- latest due time added. E is read from due, meta and pay after the writes: a key this run
  -- made (due when every job was in flight, all three for a queue holding none) has no expiry
  -- yet (-1) and forces the touch, as a key that is not there (-2) would; each is read, as
  -- any may have been empty. flight, dead and ctr are not written here, so they keep E (or
  -- are absent). PEXPIRETIME is absolute, on the clock TIME reads: no rounding between the
  -- two. A touch sets E ARGV[4] (an hour) beyond what it needs, so the enqueues that follow
  -- within that time, due no later, find E far enough and set nothing.
  local idle = tonumber(ARGV[3])
  local need = math.max(now, latest) + idle
  if redis.call('PEXPIRETIME', KEYS[1]) < need or redis.call('PEXPIRETIME', KEYS[3]) < need
      or redis.call('PEXPIRETIME', KEYS[4]) < need then
    touch(now, idle + tonumber(ARGV[4]))
  end
  -- Tells every gateway instance's waiting claims: '<origin> <due in ms>' of the run's
  -- earliest job, so that each wakes one of them for a job due now and none for a later one;
  -- the look it makes sees the run's other jobs (their due times set its alarm, and jobs left
  -- due make another claim look at once: see claim_waiting in src/queues/mod.rs).
  redis.call('PUBLISH', ARGV[5], ARGV[6] .. ' ' .. int(math.max(0, earliest - now)))
  -- And the gateways streaming the queue's ready jobs, once per run (sharded pub/sub on
  -- q:{queue}:events, the queue's slot, spelt from its first key).
  redis.call('SPUBLISH', string.match(KEYS[1], '^(.*):[^:]*$') .. ':events', '')
end
replies[1] = now or -1
return replies
