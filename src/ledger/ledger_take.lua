-- Hand the ledger a batch of one voucher's orders: entries left pending too long by any
-- consumer (a crashed instance, or an earlier failed attempt) first, then new ones.
-- KEYS[1]  sk:{voucher}:orders (stream)   KEYS[2] sk:{voucher}:attempts (hash)
-- ARGV[1]  consumer group   ARGV[2] this consumer   ARGV[3] idle ms before a pending entry is
--          taken over   ARGV[4] most entries to return
-- Returns  {{id, {field, value, ...}, attempts}, ...}
-- `attempts` counts the times the database refused this very row, not deliveries: XAUTOCLAIM
-- also re-delivers after rounds in which the database as a whole was down, and those must
-- not bring an order closer to the dead-letter stream.
-- The group is created on first use, from the start of the stream, so no order is skipped.
local group, me, count = ARGV[1], ARGV[2], tonumber(ARGV[4])
local created = redis.pcall('XGROUP', 'CREATE', KEYS[1], group, '0', 'MKSTREAM')
if type(created) == 'table' and created.err and not string.find(created.err, 'BUSYGROUP') then
  return redis.error_reply(created.err)
end
local out = {}
local claimed = redis.call('XAUTOCLAIM', KEYS[1], group, me, ARGV[3], '0-0', 'COUNT', count)
for _, e in ipairs(claimed[2]) do
  if e and e[1] then
    local attempts = tonumber(redis.call('HGET', KEYS[2], e[1])) or 0
    out[#out + 1] = { e[1], e[2] or {}, attempts }
  end
end
if #out < count then
  local fresh = redis.call('XREADGROUP', 'GROUP', group, me, 'COUNT', count - #out,
    'STREAMS', KEYS[1], '>')
  if fresh and fresh[1] then
    for _, e in ipairs(fresh[1][2]) do
      out[#out + 1] = { e[1], e[2] or {}, 0 }
    end
  end
end
return out
