-- Add items to a scalable Bloom filter on plain bitmaps (the Lua engine); creates it on first use.
-- (after dedup_common.lua, which describes the keys and ARGV[5..])
-- ARGV[1]       capacity the gateway expects stored
-- ARGV[2]       error_rate the gateway expects stored
-- ARGV[3]       1 when an absent filter may be created with ARGV[1..2], else 0
-- ARGV[4]       idle retention in seconds: every existing key's TTL is reset to it
-- ARGV[5..]     the layout and the items (dedup_common.lua's ARGV[at..], at = 5): ARGV[6] is
--               the piece size (see "Pieces" below)
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
local stored = redis.call('HMGET', meta, 'capacity', 'error_rate', 'engine', 'layers', 'items', 'last')
local nlayers = layout(5)

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

local function positions(h, spec)
  local m = spec[2]
  local a, b = first_and_step(h, m)
  local out = {}
  for j = 1, spec[3] do
    out[j] = a
    a = (a + b) % m
  end
  return out
end

local function save()
  redis.call('HSET', meta, 'layers', layers, 'items', items, 'last', last)
  expire(layers, ARGV[4])
end

if not ready(layers) then
  save()
  return { 4, layers - 1 }
end

local flags = {}
for n = 0, count - 1 do
  local h = item(first_item + n * 4)
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
