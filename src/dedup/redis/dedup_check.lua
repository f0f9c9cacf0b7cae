-- Check items against a scalable Bloom filter on plain bitmaps (the Lua engine). Writes only TTLs.
-- KEYS[1]       metadata hash bf:{filter}: capacity, error_rate, engine, layers, items, last
-- KEYS[2..L+1]  layer bitmaps bf:{filter}:0 .. bf:{filter}:L-1: every layer it may ever have
-- ARGV[1]       capacity the gateway expects stored
-- ARGV[2]       error_rate the gateway expects stored
-- ARGV[3]       idle retention in seconds: every existing key's TTL is reset to it
-- ARGV[4]       L, the number of layers in the layout
-- ARGV[5]       piece size in bytes: a bigger layer is kept as piece keys (see dedup_add.lua)
-- ARGV[6..]     per layer i: capacity, bits, hashes (3·L values); then per item the high and
--               low 32 bits of h1, then of h2 (4 values each; see src/dedup/logic.rs)
-- Returns       {0, seen (0|1) per item}           seen: some layer has all the item's bits
--               {1}                                no such filter (nothing seen)
--               {2, capacity, error_rate, engine}  stored parameters differ from ARGV[1..2]
local meta = KEYS[1]
local stored = redis.call('HMGET', meta, 'capacity', 'error_rate', 'engine', 'layers')
if not stored[1] then return { 1 } end
if stored[1] ~= ARGV[1] or stored[2] ~= ARGV[2] or stored[3] ~= 'lua' then
  return { 2, stored[1], stored[2], stored[3] }
end
local layers = tonumber(stored[4])
local nlayers = tonumber(ARGV[4])
local specs = {}
for i = 1, nlayers do
  local at = 6 + (i - 1) * 3
  specs[i] = { tonumber(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]) }
end
local first_item = 6 + nlayers * 3
local piece_bits = tonumber(ARGV[5]) * 8

-- Per layer: true = piece keys, false = one key (see dedup_add.lua).
local pieced = {}
local function is_pieced(i)
  if pieced[i] == nil then
    pieced[i] = specs[i][2] > piece_bits and redis.call('STRLEN', KEYS[i + 1]) == 0
  end
  return pieced[i]
end

local function bit_at(i, pos)
  if is_pieced(i) then
    return KEYS[i + 1] .. ':' .. math.floor(pos / piece_bits), pos % piece_bits
  end
  return KEYS[i + 1], pos
end

-- (hi·2^32 + lo) mod m in 16-bit limbs, so every intermediate stays below 2^48 (exact in doubles).
local function reduce(hi, lo, m)
  local r = 0
  for _, limb in ipairs({ math.floor(hi / 65536), hi % 65536, math.floor(lo / 65536), lo % 65536 }) do
    r = (r * 65536 + limb) % m
  end
  return r
end

local function has(i, h)
  local spec = specs[i]
  local m = spec[2]
  local a = reduce(h[1], h[2], m)
  local b = reduce(h[3], h[4], m)
  if b == 0 then b = 1 % m end
  for _ = 1, spec[3] do
    if redis.call('GETBIT', bit_at(i, a)) == 0 then return false end
    a = (a + b) % m
  end
  return true
end

local out = { 0 }
for at = first_item, #ARGV, 4 do
  local h = { tonumber(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3]) }
  local seen = 0
  for i = layers, 1, -1 do
    if has(i, h) then
      seen = 1
      break
    end
  end
  out[#out + 1] = seen
end

redis.call('EXPIRE', meta, ARGV[3])
for i = 1, layers do
  if is_pieced(i) then
    for n = 0, math.floor((specs[i][2] - 1) / piece_bits) do
      redis.call('EXPIRE', KEYS[i + 1] .. ':' .. n, ARGV[3])
    end
  else
    redis.call('EXPIRE', KEYS[i + 1], ARGV[3])
  end
end
return out
