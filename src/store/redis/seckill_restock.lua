-- Add stock to a voucher, never past the cap.
-- KEYS[1]  the voucher hash sk:{voucher}
-- ARGV[1]  quantity (>= 1)   ARGV[2] cap: stock + sold may not exceed it
-- Returns  {'ok', stock, sold, begin, end, limit, now_ms}, {'not_found'}
--          or {'over_cap', stock, sold} (nothing changed)
local v = redis.call('HMGET', KEYS[1], 'stock', 'sold', 'begin', 'end', 'limit')
local stock, sold = tonumber(v[1]), tonumber(v[2]) or 0
if not stock or not v[3] or not v[4] then
  return { 'not_found' }
end
if stock + sold + tonumber(ARGV[1]) > tonumber(ARGV[2]) then
  return { 'over_cap', stock, sold }
end
stock = redis.call('HINCRBY', KEYS[1], 'stock', ARGV[1])
-- The voucher's own stream cap only grows (see seckill_put.lua).
local cap = math.max(tonumber(redis.call('HGET', KEYS[1], 'cap')) or 0, tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 'cap', cap)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return { 'ok', stock, sold, v[3], v[4], v[5] or 1, now }
