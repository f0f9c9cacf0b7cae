-- How far the ledger is behind on one voucher; also retires consumers that hold nothing and
-- have been idle long (every restarted instance leaves one behind).
-- KEYS[1]  sk:{voucher}:orders (stream)   KEYS[2] sk:{voucher}:dead (stream)
-- ARGV[1]  consumer group   ARGV[2] idle ms after which an empty consumer is deleted
-- Returns  {pending (delivered, not acked), lag (not yet delivered), dead letters}
local function map(flat)
  local m = {}
  for i = 1, #flat, 2 do
    m[flat[i]] = flat[i + 1]
  end
  return m
end
local pending, lag = 0, redis.call('XLEN', KEYS[1])
if redis.call('EXISTS', KEYS[1]) == 1 then
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    local info = map(g)
    if info['name'] == ARGV[1] then
      pending = info['pending'] or 0
      -- Redis 7 reports lag (nil when it cannot tell); then fall back to the stream length.
      if type(info['lag']) == 'number' then
        lag = info['lag']
      end
      for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
        local consumer = map(c)
        if consumer['pending'] == 0 and consumer['idle'] > tonumber(ARGV[2]) then
          redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], consumer['name'])
        end
      end
    end
  end
end
return { pending, lag, redis.call('XLEN', KEYS[2]) }
