-- Buy one unit of a voucher for each of N purchases, in order, as if each ran alone: every
-- check and the sale itself in one atomic step, and, under an idempotency key, the lookup of the
-- key's first outcome and the record of this one in the same step (so "it happened" and "its
-- reply is recorded" never disagree). The purchases a gateway worker takes up in one turn come
-- in one call (src/seckill/redis/buy.rs): one script run for a burst on one voucher.
-- KEYS[1]  the voucher hash sk:{voucher} (stock, sold, begin, end, limit)
-- KEYS[2]  sk:{voucher}:buyers       hash user -> orders bought
-- KEYS[3]  sk:{voucher}:user_orders  hash user -> space-separated stream ids of those orders
-- KEYS[4]  sk:{voucher}:orders       stream, one entry per order (fields: user, voucher, nth:
--          the user's n-th order of this voucher, which the ledger keeps unique)
-- KEYS[4+i] purchase i's sk:{voucher}:idem:<sha256 of the key>  string "fingerprint\ntag\narg"
--          (only read or written when its fingerprint is not empty)
-- ARGV[1]  voucher id   ARGV[2] stream cap for a voucher that has none of its own (made before
--          caps were stored): MAXLEN is the voucher's field 'cap', which stock + sold never
--          exceeds, so trimming never removes an order   ARGV[3] idempotency TTL (s)
-- ARGV[2+2i], ARGV[3+2i]  purchase i's user id and its fingerprint under an idempotency key, or ''
-- Returns  one reply per purchase, in order, each
--          {'ok', stream id} | {'not_found'} | {'not_started'} | {'ended'} | {'sold_out'}
--          | {'already_ordered', 'id id ...'}
--          | {'replay', <one of the above's tag>, <its argument>} | {'key_reused'}
-- An 'already_ordered' is recorded without its order ids (a user at a per-user limit of
-- 1,000 would make each refused retry store ~17 KB for a day: docs/performance.md "Abuse budget");
-- its replay reads them again. They only change if an admin raised the limit in between.
-- A run that sold publishes the voucher's new state once on sk:{voucher}:events (SPUBLISH,
-- "<stock> <sold> <begin> <end>").
-- A missing voucher or missing field is an answer, never a Lua error.
local voucher, ttl = ARGV[1], ARGV[3]
local n = (#ARGV - 3) / 2

local v = redis.call('HMGET', KEYS[1], 'stock', 'begin', 'end', 'limit', 'cap')
local stock, b, e = tonumber(v[1]), tonumber(v[2]), tonumber(v[3])
local limit = tonumber(v[4]) or 1
local cap = v[5] or ARGV[2]
-- The window's verdict for every purchase of the call: one clock read.
local closed
if not stock or not b or not e then
  closed = 'not_found'
else
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if now < b then
    closed = 'not_started'
  elseif now >= e then
    closed = 'ended'
  end
end

-- Each buyer's count and order ids, read for the whole call in one HMGET each and kept here as
-- its sales change them, written back once at the end: a sale then costs its XADD alone, not
-- five calls (measured in docs/performance.md).
-- Read only when something can be sold: a sold-out or closed burst reads nothing per buyer.
local held, held0, orders, changed = {}, {}, {}, {}
if not closed and stock > 0 then
  local users = {}
  for i = 1, n do
    users[i] = ARGV[2 + 2 * i]
  end
  local counts = redis.call('HMGET', KEYS[2], unpack(users))
  local ids = redis.call('HMGET', KEYS[3], unpack(users))
  for i = 1, n do
    held[users[i]] = tonumber(counts[i]) or 0
    held0[users[i]] = held[users[i]]
    orders[users[i]] = ids[i] or false
  end
end
-- A buyer's order ids, from this call's reads when it made them, else from the store.
local function orders_of(user)
  local ids = orders[user]
  if ids == nil then
    ids = redis.call('HGET', KEYS[3], user) or false
    orders[user] = ids
  end
  return ids or ''
end

local sold = 0
local replies = {}
for i = 1, n do
  local user, fp, idem = ARGV[2 + 2 * i], ARGV[3 + 2 * i], KEYS[4 + i]
  local reply
  if fp ~= '' then
    local first = redis.call('GET', idem)
    if first then
      local ffp, tag, arg = string.match(first, '^([^\n]*)\n([^\n]*)\n(.*)$')
      if ffp ~= fp then
        reply = { 'key_reused' }
      else
        if tag == 'already_ordered' then
          arg = orders_of(user)
        end
        reply = { 'replay', tag, arg }
      end
    end
  end
  if not reply then
    local tag, arg = closed, nil
    if not tag then
      local count = stock - sold > 0 and held[user]
      if not count then
        tag = 'sold_out'
      elseif count >= limit then
        tag, arg = 'already_ordered', orders_of(user)
      else
        local id = redis.call('XADD', KEYS[4], 'MAXLEN', cap, '*', 'user', user,
          'voucher', voucher, 'nth', count + 1)
        sold = sold + 1
        if count == held0[user] then
          -- Its first sale in the call: written back once at the end, whatever follows.
          changed[#changed + 1] = user
        end
        held[user] = count + 1
        local ids = orders[user]
        orders[user] = ids and (ids .. ' ' .. id) or id
        tag, arg = 'ok', id
      end
    end
    -- Nothing happens for an unknown voucher, so nothing is recorded for it either.
    if fp ~= '' and tag ~= 'not_found' then
      local kept = arg or ''
      if tag == 'already_ordered' then
        kept = ''
      end
      redis.call('SET', idem, fp .. '\n' .. tag .. '\n' .. kept, 'EX', ttl)
    end
    reply = { tag, arg }
  end
  replies[i] = reply
end
if sold > 0 then
  local counts, ids = {}, {}
  for _, user in ipairs(changed) do
    counts[#counts + 1], counts[#counts + 2] = user, held[user]
    ids[#ids + 1], ids[#ids + 2] = user, orders[user]
  end
  redis.call('HSET', KEYS[2], unpack(counts))
  redis.call('HSET', KEYS[3], unpack(ids))
  local left = redis.call('HINCRBY', KEYS[1], 'stock', -sold)
  local total = redis.call('HINCRBY', KEYS[1], 'sold', sold)
  -- One message for the whole run, however many it sold: the voucher's state now, to the
  -- gateways streaming its events (sharded pub/sub: the channel shares the voucher's slot).
  redis.call('SPUBLISH', KEYS[1] .. ':events', left .. ' ' .. total .. ' ' .. v[2] .. ' ' .. v[3])
end
return replies
