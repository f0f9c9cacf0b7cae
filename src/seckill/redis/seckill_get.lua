-- Read a voucher with the store's clock, so its status agrees with what a purchase would see.
-- KEYS[1]  the voucher hash sk:{voucher}
-- Returns  {'ok', stock, sold, begin, end, limit, now_ms, rev} or {'not_found'}; rev is 0 for a
-- voucher no put has counted (seckill_put.lua), as written before puts counted themselves.
local v = redis.call('HMGET', KEYS[1], 'stock', 'sold', 'begin', 'end', 'limit', 'rev')
if not v[1] or not v[3] or not v[4] then
  return { 'not_found' }
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return { 'ok', v[1], v[2] or 0, v[3], v[4], v[5] or 1, now, v[6] or 0 }
