-- A page of the dead list, oldest death first, stopping once the payloads pass a byte budget.
-- ARGV[1] cursor (the last sequence seen, 0 for the start)  ARGV[2] limit  ARGV[3] byte budget
-- Returns {{seq, id, payload, run_at, attempts}, ...}
local ids = redis.call('ZRANGEBYSCORE', KEYS[5], '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, ARGV[2])
local out, bytes, budget = {}, 0, tonumber(ARGV[3])
for i = 1, #ids, 2 do
  if bytes >= budget then
    break
  end
  local id = ids[i]
  local meta = redis.call('HGET', KEYS[3], id)
  local payload = redis.call('HGET', KEYS[4], id)
  if meta and payload then
    local run_at, attempts = string.match(meta, '^(%S+) (%S+)')
    out[#out + 1] = { ids[i + 1], id, payload, run_at, attempts }
    bytes = bytes + #payload
  end
end
return out
