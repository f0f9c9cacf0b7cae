-- How far the ledger is behind on one voucher.
-- KEYS[1]  sk:{voucher}:orders (stream)   KEYS[2] sk:{voucher}:dead (stream)
-- ARGV[1]  consumer group
-- Returns  {pending (delivered, not acked), lag (not yet delivered), dead letters}
local pending, lag = 0, redis.call('XLEN', KEYS[1])
if redis.call('EXISTS', KEYS[1]) == 1 then
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    local info = {}
    for i = 1, #g, 2 do
      info[g[i]] = g[i + 1]
    end
    if info['name'] == ARGV[1] then
      pending = info['pending'] or 0
      -- Redis 7 reports lag (nil when it cannot tell); then fall back to the stream length.
      if type(info['lag']) == 'number' then
        lag = info['lag']
      end
    end
  end
end
return { pending, lag, redis.call('XLEN', KEYS[2]) }
