-- Give up on order entries: copy each to the dead-letter stream with the reason, then ack it,
-- in one step so an entry is never both lost and unacknowledged.
-- KEYS[1]  sk:{voucher}:orders (stream)   KEYS[2] sk:{voucher}:dead (stream)
-- ARGV[1]  consumer group   ARGV[2] reason   ARGV[3..] entry ids
-- Returns  the number of entries dead-lettered
local n = 0
for i = 3, #ARGV do
  local found = redis.call('XRANGE', KEYS[1], ARGV[i], ARGV[i])
  local fields = { 'id', ARGV[i], 'reason', ARGV[2] }
  if found[1] then
    for _, f in ipairs(found[1][2]) do
      fields[#fields + 1] = f
    end
  end
  redis.call('XADD', KEYS[2], '*', unpack(fields))
  n = n + redis.call('XACK', KEYS[1], ARGV[1], ARGV[i])
end
return n
