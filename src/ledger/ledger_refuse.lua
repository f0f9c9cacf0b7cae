-- The database refused these entries' rows for their own data (never for the database as a
-- whole): count one attempt each; an entry refused the most times allowed is copied to the
-- dead-letter stream with the reason code and acked, in one step so it is never both lost and
-- unacknowledged. The others stay pending and are claimed again after the idle time.
-- KEYS[1]  sk:{voucher}:orders (stream)   KEYS[2] sk:{voucher}:dead (stream)
-- KEYS[3]  sk:{voucher}:attempts (hash)
-- ARGV[1]  consumer group   ARGV[2] reason code   ARGV[3] most attempts   ARGV[4..] entry ids
-- Returns  the number of entries dead-lettered
local n = 0
for i = 4, #ARGV do
  local id = ARGV[i]
  local attempts = redis.call('HINCRBY', KEYS[3], id, 1)
  if attempts >= tonumber(ARGV[3]) then
    local found = redis.call('XRANGE', KEYS[1], id, id)
    local fields = { 'id', id, 'reason', ARGV[2], 'attempts', attempts }
    if found[1] then
      for _, f in ipairs(found[1][2]) do
        fields[#fields + 1] = f
      end
    end
    redis.call('XADD', KEYS[2], '*', unpack(fields))
    redis.call('XACK', KEYS[1], ARGV[1], id)
    redis.call('HDEL', KEYS[3], id)
    n = n + 1
  end
end
return n
