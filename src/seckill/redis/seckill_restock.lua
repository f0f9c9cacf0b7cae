-- Add stock to a voucher, never past the cap; under an idempotency key, the lookup of the
-- key's first outcome and the record of this one happen in the same step.
-- KEYS[1]  the voucher hash sk:{voucher}
-- KEYS[2]  sk:{voucher}:idem:<sha256 of the key>: "fingerprint\n" then the first reply's items
--          joined by spaces; only read or written when ARGV[3] is not empty
-- ARGV[1]  quantity (>= 1)   ARGV[2] cap: stock + sold may not exceed it
-- ARGV[3]  the request's fingerprint under an idempotency key, or ''   ARGV[4] the record's TTL
-- Returns  {'ok', stock, sold, begin, end, limit, now_ms}, {'not_found'}
--          or {'over_cap', stock, sold} (nothing changed); {'replay', <the first reply>} or
--          {'key_reused'} under a key seen before (nothing changed)
local fp = ARGV[3]
if fp ~= '' then
  local first = redis.call('GET', KEYS[2])
  if first then
    local ffp, items = string.match(first, '^([^\n]*)\n(.*)$')
    if ffp ~= fp then
      return { 'key_reused' }
    end
    local reply = { 'replay' }
    for item in string.gmatch(items, '%S+') do
      reply[#reply + 1] = item
    end
    return reply
  end
end

local function answer(reply)
  -- Nothing happens for an unknown voucher, so nothing is recorded for it either.
  if fp ~= '' and reply[1] ~= 'not_found' then
    local items = {}
    for i, v in ipairs(reply) do
      items[i] = tostring(v)
    end
    redis.call('SET', KEYS[2], fp .. '\n' .. table.concat(items, ' '), 'EX', ARGV[4])
  end
  return reply
end

local v = redis.call('HMGET', KEYS[1], 'stock', 'sold', 'begin', 'end', 'limit')
local stock, sold = tonumber(v[1]), tonumber(v[2]) or 0
if not stock or not v[3] or not v[4] then
  return answer({ 'not_found' })
end
if stock + sold + tonumber(ARGV[1]) > tonumber(ARGV[2]) then
  return answer({ 'over_cap', stock, sold })
end
stock = redis.call('HINCRBY', KEYS[1], 'stock', ARGV[1])
-- The voucher's own stream cap only grows (see seckill_put.lua).
local cap = math.max(tonumber(redis.call('HGET', KEYS[1], 'cap')) or 0, tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 'cap', cap)
-- The voucher's state now, to the gateways streaming its events (see seckill_buy.lua).
redis.call('SPUBLISH', KEYS[1] .. ':events', stock .. ' ' .. sold .. ' ' .. v[3] .. ' ' .. v[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return answer({ 'ok', stock, sold, v[3], v[4], v[5] or 1, now })
