-- Nearby search on one geo set. Answers exactly what
--   GEOSEARCH <key> <from> <shape> <order> COUNT <count> WITHDIST WITHHASH
-- answers, but on a dense layer without collecting and sorting every point of the area.
--
-- For a nearest-first circle search it first estimates the layer's density around the centre
-- (ZCOUNT over the geohash cell of ARGV[11] bits per axis that holds the centre), searches the
-- radius expected to hold about 1.6x `count` points, and doubles it while fewer than `count`
-- come back, ending with the requested radius. That is exact: once a radius r holds `count`
-- points, every point outside r is farther than each of them. Box and farthest-first searches
-- have no such shortcut and run the plain query.
--
-- KEYS[1]  the layer's geo set
-- ARGV[1]  'point' or 'member'
-- ARGV[2]  centre longitude (point) | centre member (member)
-- ARGV[3]  centre latitude (point) | '' (member)
-- ARGV[4]  the centre's 52-bit geohash score (point) | '' (member: read with ZSCORE)
-- ARGV[5]  'BYRADIUS' or 'BYBOX'
-- ARGV[6]  radius, or box width, in ARGV[8] units
-- ARGV[7]  box height in ARGV[8] units | '' (radius)
-- ARGV[8]  unit: m | km | mi | ft
-- ARGV[9]  metres per unit
-- ARGV[10] 'ASC' or 'DESC'
-- ARGV[11] count
-- ARGV[12] geohash step (bits per axis) of the density cell, chosen for the radius
-- Returns {0} when the centre member does not exist, else {1, centre score ('' for a point),
-- hits}, hits being GEOSEARCH's reply: {{member, distance (string, 4 decimals), score}, ...}.

local key = KEYS[1]
local count = tonumber(ARGV[11])
local from
local score
local lat
if ARGV[1] == 'member' then
  score = redis.call('ZSCORE', key, ARGV[2])
  if not score then
    return {0}
  end
  lat = tonumber(redis.call('GEOPOS', key, ARGV[2])[1][2])
  from = {'FROMMEMBER', ARGV[2]}
else
  score = ARGV[4]
  lat = tonumber(ARGV[3])
  from = {'FROMLONLAT', ARGV[2], ARGV[3]}
end

local function search(shape)
  local args = {'GEOSEARCH', key}
  for _, a in ipairs(from) do args[#args + 1] = a end
  for _, a in ipairs(shape) do args[#args + 1] = a end
  for _, a in ipairs({ARGV[10], 'COUNT', ARGV[11], 'WITHDIST', 'WITHHASH'}) do
    args[#args + 1] = a
  end
  return redis.call(unpack(args))
end

local centre = ARGV[1] == 'member' and score or ''
if ARGV[5] == 'BYBOX' then
  return {1, centre, search({'BYBOX', ARGV[6], ARGV[7], ARGV[8]})}
end

if ARGV[10] == 'ASC' and redis.call('ZCARD', key) > count then
  local radius = tonumber(ARGV[6])
  local step = tonumber(ARGV[12])
  local span = 2 ^ (52 - 2 * step)
  local low = math.floor(tonumber(score) / span) * span
  local near = redis.call('ZCOUNT', key, string.format('%.17g', low),
    '(' .. string.format('%.17g', low + span))
  if near > 0 then
    local metres_per_degree = 6372797.560856 * math.pi / 180
    local cell_h = 170.10225756 / 2 ^ step * metres_per_degree
    local cell_w = 360 / 2 ^ step * metres_per_degree * math.cos(math.rad(lat))
    local density = near / (cell_w * cell_h)
    local r = math.sqrt(count / (math.pi * density)) * 1.25 / tonumber(ARGV[9])
    while r < radius do
      local hits = search({'BYRADIUS', string.format('%.17g', r), ARGV[8]})
      if #hits >= count then
        return {1, centre, hits}
      end
      r = r * 2
    end
  end
end
-- The requested radius exactly as given, so the last try is the plain query itself.
return {1, centre, search({'BYRADIUS', ARGV[6], ARGV[8]})}
