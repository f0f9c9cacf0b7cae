-- Add items to a scalable Bloom filter on plain bitmaps (the Lua engine); creates it on first use.
-- KEYS[1]       metadata hash bf:{filter}: capacity, error_rate, engine, layers, items, last
-- KEYS[2..L+1]  layer bitmaps bf:{filter}:0 .. bf:{filter}:L-1: every layer it may ever have
-- ARGV[1]       capacity the gateway expects stored
-- ARGV[2]       error_rate the gateway expects stored
-- ARGV[3]       1 when an absent filter may be created with ARGV[1..2], else 0
-- ARGV[4]       idle retention in seconds: every existing key's TTL is reset to it
-- ARGV[5]       L, the number of layers in the layout
-- ARGV[6]       piece size in bytes: a layer bigger than that is kept as piece keys
--               <layer key>:0, :1, ... (see "Pieces" below)
-- ARGV[7..]     per layer i: capacity, bits, hashes (3·L values); then per item the high and
--               low 32 bits of h1, then of h2 (4 values each; see src/dedup/logic.rs)
-- Returns       {0, added (0|1) per item}          added: no layer had all the item's bits
--               {1}                                absent and ARGV[3] = 0
--               {2, capacity, error_rate, engine}  stored parameters differ from ARGV[1..2]
--               {3}                                the batch could outgrow the layout; nothing written
--               {4, i, added per item}             stopped before the first item that needs
--                                                  layer i (0-based), not yet built: the gateway
--                                                  builds it and sends the remaining items
--
-- Pieces: one allocation of a layer of tens of MiB held Redis ~30 ms, and growing one string
-- in steps reallocates (copies) it, so a layer bigger than ARGV[6] bytes lives in piece keys
-- of ARGV[6] bytes under the same hash tag (same slot, so a Cluster serves them to the
-- script), built one per call by the gateway (dedup_grow.lua) before a script sets a bit in
-- them; bit p is bit p mod (8·ARGV[6]) of piece floor(p / (8·ARGV[6])). A big layer stored
-- whole by an earlier version (a long string at the layer key) is used as it is.
local meta = KEYS[1]
local stored = redis.call('HMGET', meta, 'capacity', 'error_rate', 'engine', 'layers', 'items', 'last')
local nlayers = tonumber(ARGV[5])
local specs = {}
for i = 1, nlayers do
  local at = 7 + (i - 1) * 3
  specs[i] = { tonumber(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]) }
end
local first_item = 7 + nlayers * 3
local piece = tonumber(ARGV[6])
local piece_bits = piece * 8

-- Per layer: true = pieces, false = one key (small, or big and stored whole by an earlier
-- version).
local pieced = {}
local function is_pieced(i)
  if pieced[i] == nil then
    pieced[i] = specs[i][2] > piece_bits and redis.call('STRLEN', KEYS[i + 1]) == 0
  end
  return pieced[i]
end

-- The key and offset of bit `pos` of layer i.
local function bit_at(i, pos)
  if is_pieced(i) then
    return KEYS[i + 1] .. ':' .. math.floor(pos / piece_bits), pos % piece_bits
  end
  return KEYS[i + 1], pos
end

-- Whether layer i is fully built; builds it when that is one small piece. Pieces are built in
-- order, so the last one having its full size means all have.
local function ready(i)
  local bits = specs[i][2]
  if is_pieced(i) then
    local n = math.floor((bits - 1) / piece_bits)
    local want = math.ceil((bits - n * piece_bits) / 8)
    return redis.call('STRLEN', KEYS[i + 1] .. ':' .. n) >= want
  end
  local bytes = math.ceil(bits / 8)
  local len = redis.call('STRLEN', KEYS[i + 1])
  if len >= bytes then return true end
  if bytes - len > piece then return false end
  redis.call('SETRANGE', KEYS[i + 1], bytes - 1, '\0')
  return true
end

local layers, items, last
if not stored[1] then
  if ARGV[3] ~= '1' then return { 1 } end
  layers, items, last = 1, 0, 0
  redis.call('HSET', meta, 'capacity', ARGV[1], 'error_rate', ARGV[2], 'engine', 'lua',
    'layers', 1, 'items', 0, 'last', 0)
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

-- Probes the positions one by one and stops at the first clear bit (most layers need one or
-- two GETBITs for a new item), rather than computing all of them first.
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

local function save()
  redis.call('HSET', meta, 'layers', layers, 'items', items, 'last', last)
  redis.call('EXPIRE', meta, ARGV[4])
  for i = 1, layers do
    if is_pieced(i) then
      for n = 0, math.floor((specs[i][2] - 1) / piece_bits) do
        redis.call('EXPIRE', KEYS[i + 1] .. ':' .. n, ARGV[4])
      end
    else
      redis.call('EXPIRE', KEYS[i + 1], ARGV[4])
    end
  end
end

if not ready(layers) then
  save()
  return { 4, layers - 1 }
end

local flags = {}
for n = 0, count - 1 do
  local at = first_item + n * 4
  local h = { tonumber(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3]) }
  local seen = false
  for i = layers, 1, -1 do
    if has(i, h) then
      seen = true
      break
    end
  end
  if seen then
    flags[#flags + 1] = 0
  else
    if last >= specs[layers][1] then
      if not ready(layers + 1) then
        save()
        return { 4, layers, unpack(flags) }
      end
      layers, last = layers + 1, 0
    end
    for _, pos in ipairs(positions(h, specs[layers])) do
      local key, at = bit_at(layers, pos)
      redis.call('SETBIT', key, at, 1)
    end
    last, items = last + 1, items + 1
    flags[#flags + 1] = 1
  end
end

save()
return { 0, unpack(flags) }
