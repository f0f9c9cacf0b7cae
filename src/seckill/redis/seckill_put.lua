-- Create a voucher, or replace its stock left, window and per-user limit (what was sold stays).
-- KEYS[1]  the voucher hash sk:{voucher}
-- ARGV[1]  stock left   ARGV[2] begin (unix ms)   ARGV[3] end (unix ms)
-- ARGV[4]  per-user limit   ARGV[5] cap: stock + sold may not exceed it
-- The voucher keeps its own stream cap (field 'cap'): the largest cap any create, replace or
-- restock was admitted under, so the purchase script's MAXLEN never drops below stock + sold
-- whatever GATEWAY_SECKILL_MAX_ORDERS another instance, or a later restart, runs with.
-- Every put counts itself in the field 'rev', so the voucher listing's index, kept in another
-- slot, can tell which of two puts' begins is the later (seckill_index_move.lua).
-- Returns  {'created'|'replaced', stock, sold, begin, end, limit, now_ms, rev}
--          or {'over_cap', sold} (nothing changed)
local sold = tonumber(redis.call('HGET', KEYS[1], 'sold')) or 0
local stock = tonumber(ARGV[1])
if stock + sold > tonumber(ARGV[5]) then
  return { 'over_cap', sold }
end
local existed = redis.call('EXISTS', KEYS[1]) == 1
local cap = math.max(tonumber(redis.call('HGET', KEYS[1], 'cap')) or 0, tonumber(ARGV[5]))
redis.call('HSET', KEYS[1], 'stock', ARGV[1], 'sold', sold, 'begin', ARGV[2], 'end', ARGV[3],
  'limit', ARGV[4], 'cap', cap)
local rev = redis.call('HINCRBY', KEYS[1], 'rev', 1)
-- The voucher's state now, to the gateways streaming its events (see seckill_buy.lua).
redis.call('SPUBLISH', KEYS[1] .. ':events', ARGV[1] .. ' ' .. sold .. ' ' .. ARGV[2] .. ' ' .. ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return { existed and 'replaced' or 'created', ARGV[1], sold, ARGV[2], ARGV[3], ARGV[4], now, rev }
