-- Buy one unit of a voucher: every check and the sale itself in one atomic step, and, under an
-- idempotency key, the lookup of the key's first outcome and the record of this one in the
-- same step (so "it happened" and "its reply is recorded" never disagree).
-- KEYS[1]  the voucher hash sk:{voucher} (stock, sold, begin, end, limit)
-- KEYS[2]  sk:{voucher}:buyers       hash user -> orders bought
-- KEYS[3]  sk:{voucher}:user_orders  hash user -> space-separated stream ids of those orders
-- KEYS[4]  sk:{voucher}:orders       stream, one entry per order (fields: user, voucher, nth:
--          the user's n-th order of this voucher, which the ledger keeps unique)
-- KEYS[5]  sk:{voucher}:idem:<sha256 of the key>  string "fingerprint\ntag\narg" (only read or
--          written when ARGV[4] is not empty)
-- ARGV[1]  user id   ARGV[2] voucher id   ARGV[3] stream cap for a voucher that has none of
--          its own (made before caps were stored): MAXLEN is the voucher's field 'cap', which
--          stock + sold never exceeds, so trimming never removes an order
-- ARGV[4]  the request's fingerprint under an idempotency key, or ''   ARGV[5] its TTL (s)
-- Returns  {'ok', stream id} | {'not_found'} | {'not_started'} | {'ended'} | {'sold_out'}
--          | {'already_ordered', 'id id ...'}
--          | {'replay', <one of the above's tag>, <its argument>} | {'key_reused'}
-- An 'already_ordered' is recorded without its order ids (a user at a per-user limit of
-- 1,000 would make each refused retry store ~17 KB for a day: docs/performance.md "Abuse budget");
-- its replay reads them again. They only change if an admin raised the limit in between.
-- A missing voucher or missing field is an answer, never a Lua error.
local fp = ARGV[4]
if fp ~= '' then
  local first = redis.call('GET', KEYS[5])
  if first then
    local ffp, tag, arg = string.match(first, '^([^\n]*)\n([^\n]*)\n(.*)$')
    if ffp ~= fp then
      return { 'key_reused' }
    end
    if tag == 'already_ordered' then
      arg = redis.call('HGET', KEYS[3], ARGV[1]) or ''
    end
    return { 'replay', tag, arg }
  end
end

local function answer(tag, arg)
  -- Nothing happens for an unknown voucher, so nothing is recorded for it either.
  if fp ~= '' and tag ~= 'not_found' then
    local kept = arg or ''
    if tag == 'already_ordered' then
      kept = ''
    end
    redis.call('SET', KEYS[5], fp .. '\n' .. tag .. '\n' .. kept, 'EX', ARGV[5])
  end
  return { tag, arg }
end

local v = redis.call('HMGET', KEYS[1], 'stock', 'begin', 'end', 'limit', 'cap')
local stock, b, e = tonumber(v[1]), tonumber(v[2]), tonumber(v[3])
local limit = tonumber(v[4]) or 1
local cap = v[5] or ARGV[3]
if not stock or not b or not e then
  return answer('not_found')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now < b then
  return answer('not_started')
end
if now >= e then
  return answer('ended')
end
if stock <= 0 then
  return answer('sold_out')
end
local held = tonumber(redis.call('HGET', KEYS[2], ARGV[1])) or 0
if held >= limit then
  return answer('already_ordered', redis.call('HGET', KEYS[3], ARGV[1]) or '')
end
local id = redis.call('XADD', KEYS[4], 'MAXLEN', cap, '*', 'user', ARGV[1], 'voucher', ARGV[2],
  'nth', held + 1)
redis.call('HINCRBY', KEYS[1], 'stock', -1)
redis.call('HINCRBY', KEYS[1], 'sold', 1)
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
local ids = redis.call('HGET', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ids and (ids .. ' ' .. id) or id)
return answer('ok', id)
