-- Raw reference for the dedup row: test-and-set of each item in one plain-bitmap Bloom
-- filter sized like the gateway's default (100,000 items at 1%: m = 958,506 bits, k = 7),
-- double hashing over SHA-1 as a Lua Bloom engine would.
-- KEYS[1]  the bitmap
-- ARGV     the items
-- Returns  { 1 if item i was (probably) seen before, else 0 }
local m, k = 958506, 7
local out = {}
for i = 1, #ARGV do
  local h = redis.sha1hex(ARGV[i])
  local h1 = tonumber(string.sub(h, 1, 8), 16)
  local h2 = tonumber(string.sub(h, 9, 16), 16)
  local seen = 1
  for j = 0, k - 1 do
    if redis.call('SETBIT', KEYS[1], (h1 + j * h2) % m, 1) == 0 then seen = 0 end
  end
  out[i] = seen
end
return out
