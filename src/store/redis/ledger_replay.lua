-- Hand dead letters back to the ledger. Each original entry is made pending again: XCLAIM
-- FORCE re-creates the pending entry of an acknowledged one, parked under a placeholder
-- consumer and idle since the epoch, so the next ingester round anywhere claims it at once;
-- its refusal count starts over and its dead letter is removed. Nothing is inserted here, so a
-- replay can never write an order twice: the ledger's insert skips an order id it holds.
-- KEYS[1]  sk:{voucher}:orders (stream)   KEYS[2] sk:{voucher}:dead (stream)
-- KEYS[3]  sk:{voucher}:attempts (hash)
-- ARGV[1]  consumer group   ARGV[2] placeholder consumer   ARGV[3] dead letters to look at,
--          from the start of the dead-letter stream (exclusive cursor ARGV[4], '' = start)
-- Returns  {replayed, cursor of the last dead letter looked at or '' when none was left}
-- A dead letter whose original entry no longer exists is kept (and skipped by the cursor).
local start = '-'
if ARGV[4] ~= '' then
  start = '(' .. ARGV[4]
end
local dead = redis.call('XRANGE', KEYS[2], start, '+', 'COUNT', tonumber(ARGV[3]))
local replayed, last = 0, ''
for _, d in ipairs(dead) do
  last = d[1]
  local id
  for i = 1, #d[2], 2 do
    if d[2][i] == 'id' then
      id = d[2][i + 1]
      break
    end
  end
  if id then
    local back = redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, id, 'TIME', 0,
      'RETRYCOUNT', 0, 'FORCE', 'JUSTID')
    if #back == 1 then
      redis.call('HDEL', KEYS[3], id)
      redis.call('XDEL', KEYS[2], d[1])
      replayed = replayed + 1
    end
  end
end
return { replayed, last }
