-- Add items to a scalable Bloom filter on plain bitmaps (the Lua engine); creates it on first use.
-- KEYS[1]       metadata hash bf:{filter}: capacity, error_rate, engine, layers, items, last
-- KEYS[2..L+1]  layer bitmaps bf:{filter}:0 .. bf:{filter}:L-1: every layer it may ever have
-- ARGV[1]       capacity the gateway expects stored
-- ARGV[2]       error_rate the gateway expects stored
-- ARGV[3]       1 when an absent filter may be created with ARGV[1..2], else 0
-- ARGV[4]       idle retention in seconds: every existing key's TTL is reset to it
-- ARGV[5]       L, the number of layers in the layout
-- ARGV[6..]     per layer i: capacity, bits, hashes (3·L values); then per item the high and
--               low 32 bits of h1, then of h2 (4 values each; see src/dedup/logic.rs)
-- Returns       {0, added (0|1) per item}          added: no layer had all the item's bits
--               {1}                                absent and ARGV[3] = 0
--               {2, capacity, error_rate, engine}  stored parameters differ from ARGV[1..2]
--               {3}                                the batch could outgrow the layout; nothing written
local meta = KEYS[1]
local stored = redis.call('HMGET', meta, 'capacity', 'error_rate', 'engine', 'layers', 'items', 'last')
local nlayers = tonumber(ARGV[5])
local specs = {}
for i = 1, nlayers do
  local at = 6 + (i - 1) * 3
  specs[i] = { tonumber(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]) }
end
local first_item = 6 + nlayers * 3

local layers, items, last
if not stored[1] then
  if ARGV[3] ~= '1' then return { 1 } end
  layers, items, last = 1, 0, 0
  redis.call('HSET', meta, 'capacity', ARGV[1], 'error_rate', ARGV[2], 'engine', 'lua')
  redis.call('SETBIT', KEYS[2], specs[1][2] - 1, 0)
elseif stored[1] ~= ARGV[1] or stored[2] ~= ARGV[2] or stored[3] ~= 'lua' then
  return { 2, stored[1], stored[2], stored[3] }
else
  layers, items, last = tonumber(stored[4]), tonumber(stored[5]), tonumber(stored[6])
end

local count = (#ARGV - first_item + 1) / 4
local room = specs[layers][1] - math.min(last, specs[layers][1])
for i = layers + 1, nlayers do room = room + specs[i][1] end
if count > room then return { 3 } end

-- (hi·2^32 + lo) mod m in 16-bit limbs, so every intermediate stays below 2^48 (exact in doubles).
local function reduce(hi, lo, m)
  local r = 0
  for _, limb in ipairs({ math.floor(hi / 65536), hi % 65536, math.floor(lo / 65536), lo % 65536 }) do
    r = (r * 65536 + limb) % m
  end
  return r
end

local function positions(h, spec)
  local m = spec[2]
  local a = reduce(h[1], h[2], m)
  local b = reduce(h[3], h[4], m)
  if b == 0 then b = 1 % m end
  local out = {}
  for j = 1, spec[3] do
    out[j] = a
    a = (a + b) % m
  end
  return out
end

local function has(key, h, spec)
  for _, pos in ipairs(positions(h, spec)) do
    if redis.call('GETBIT', key, pos) == 0 then return false end
  end
  return true
end

local out = { 0 }
for n = 0, count - 1 do
  local at = first_item + n * 4
  local h = { tonumber(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3]) }
  local seen = false
  for i = layers, 1, -1 do
    if has(KEYS[i + 1], h, specs[i]) then
      seen = true
      break
    end
  end
  if seen then
    out[#out + 1] = 0
  else
    if last >= specs[layers][1] then
      layers, last = layers + 1, 0
      redis.call('SETBIT', KEYS[layers + 1], specs[layers][2] - 1, 0)
    end
    for _, pos in ipairs(positions(h, specs[layers])) do
      redis.call('SETBIT', KEYS[layers + 1], pos, 1)
    end
    last, items = last + 1, items + 1
    out[#out + 1] = 1
  end
end

redis.call('HSET', meta, 'layers', layers, 'items', items, 'last', last)
for i = 1, layers + 1 do
  redis.call('EXPIRE', KEYS[i], ARGV[4])
end
return out
