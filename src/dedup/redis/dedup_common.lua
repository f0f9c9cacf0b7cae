-- Shared head of dedup_add.lua and dedup_check.lua (prepended to each, since Redis scripts
-- cannot import): the Lua engine's layout, its piece keys, the items' bit positions and the
-- TTLs. Both scripts get the filter's keys, all under its hash tag:
-- KEYS[1]       metadata hash bf:{filter}: capacity, error_rate, engine, layers, items, last
-- KEYS[2..L+1]  layer bitmaps bf:{filter}:0 .. bf:{filter}:L-1: every layer it may ever have
-- and, after each script's own leading arguments, from ARGV[at] on (see layout()):
-- ARGV[at]      L, the number of layers in the layout
-- ARGV[at+1]    piece size in bytes: a layer bigger than that is kept as piece keys
--               <layer key>:0, :1, ... (see "Pieces" in dedup_add.lua)
-- ARGV[at+2..]  per layer i: capacity, bits, hashes (3·L values); then per item the high and
--               low 32 bits of h1, then of h2 (4 values each; see src/dedup/logic.rs)
local meta = KEYS[1]

-- Set by layout(): per layer { capacity, bits, hashes }, the piece size in bytes and in bits,
-- and the ARGV index of the first item's hashes.
local specs, piece, piece_bits, first_item = {}, 0, 0, 0

-- Reads the layout from ARGV[at] on; returns L.
local function layout(at)
  local nlayers = tonumber(ARGV[at])
  piece = tonumber(ARGV[at + 1])
  piece_bits = piece * 8
  for i = 1, nlayers do
    local s = at + 2 + (i - 1) * 3
    specs[i] = { tonumber(ARGV[s]), tonumber(ARGV[s + 1]), tonumber(ARGV[s + 2]) }
  end
  first_item = at + 2 + nlayers * 3
  return nlayers
end

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

-- The hashes of the item whose values start at ARGV[at]: { h1 high, h1 low, h2 high, h2 low }.
local function item(at)
  return { tonumber(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3]) }
end

-- (hi·2^32 + lo) mod m in 16-bit limbs, so every intermediate stays below 2^48 (exact in doubles).
local function reduce(hi, lo, m)
  local r = 0
  for _, limb in ipairs({ math.floor(hi / 65536), hi % 65536, math.floor(lo / 65536), lo % 65536 }) do
    r = (r * 65536 + limb) % m
  end
  return r
end

-- The first of item h's positions in a layer of m bits, and the step to the next (mod m).
local function first_and_step(h, m)
  local a = reduce(h[1], h[2], m)
  local b = reduce(h[3], h[4], m)
  if b == 0 then b = 1 % m end
  return a, b
end

-- Whether layer i has all of item h's bits. Probes the positions one by one and stops at the
-- first clear bit (most layers need one or two GETBITs for a new item), rather than computing
-- all of them first.
local function has(i, h)
  local spec = specs[i]
  local m = spec[2]
  local a, b = first_and_step(h, m)
  for _ = 1, spec[3] do
    if redis.call('GETBIT', bit_at(i, a)) == 0 then return false end
    a = (a + b) % m
  end
  return true
end

-- Resets the TTL of the metadata and of layers 1..layers (each piece of a pieced one).
local function expire(layers, ttl)
  redis.call('EXPIRE', meta, ttl)
  for i = 1, layers do
    if is_pieced(i) then
      for n = 0, math.floor((specs[i][2] - 1) / piece_bits) do
        redis.call('EXPIRE', KEYS[i + 1] .. ':' .. n, ttl)
      end
    else
      redis.call('EXPIRE', KEYS[i + 1], ttl)
    end
  end
end

