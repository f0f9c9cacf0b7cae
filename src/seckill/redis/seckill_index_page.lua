-- One read of the voucher listing's index: the entries after a cursor, in order of begin then
-- id, by rank (ZRANGE by index: O(log n) to find the start whatever the number of vouchers,
-- however many begin at the same instant).
-- KEYS[1]  the index skr:{vouchers}:begin: voucher id scored by begin (unix ms)
-- ARGV[1]  the cursor's begin ('' from the first)   ARGV[2] the cursor's id
-- ARGV[3]  most entries to return
-- ARGV[4]  '' or the earliest begin to read, as ms from now (by this node's TIME)
-- ARGV[5]  '' or the latest begin to read, as ms from now
-- Returns  {now_ms, more (1 when entries follow those returned), id, begin, id, begin, ...}
local key = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- a <= b in byte order (Lua's own comparison follows the server's locale, the index's does not)
local function at_most(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a <= #b
end

local start = 0
if ARGV[1] ~= '' then
  local begin, id = tonumber(ARGV[1]), ARGV[2]
  local score = redis.call('ZSCORE', key, id)
  if score and tonumber(score) == begin then
    start = redis.call('ZRANK', key, id) + 1
  else
    -- The cursor's voucher moved since: the first rank past (begin, id), by bisection.
    local lo, hi = 0, redis.call('ZCARD', key)
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      local e = redis.call('ZRANGE', key, mid, mid, 'WITHSCORES')
      local s = tonumber(e[2])
      if s < begin or (s == begin and at_most(e[1], id)) then lo = mid + 1 else hi = mid end
    end
    start = lo
  end
end
if ARGV[4] ~= '' then
  local first = string.format('%d', now + tonumber(ARGV[4]))
  start = math.max(start, redis.call('ZCOUNT', key, '-inf', '(' .. first))
end
local stop = redis.call('ZCARD', key) - 1
if ARGV[5] ~= '' then
  stop = redis.call('ZCOUNT', key, '-inf', string.format('%d', now + tonumber(ARGV[5]))) - 1
end
local last = math.min(stop, start + tonumber(ARGV[3]) - 1)
local out = { now, last < stop and 1 or 0 }
if last >= start then
  local page = redis.call('ZRANGE', key, start, last, 'WITHSCORES')
  for i = 1, #page do out[#out + 1] = page[i] end
end
return out
