-- Nearby search on one geo set. Answers exactly what
--   GEOSEARCH <key> <from> <shape> <order> COUNT <count> WITHDIST WITHHASH
-- answers, but on a dense layer without collecting and sorting every point of the area.
--
-- For a nearest-first search it first estimates the layer's density around the centre
-- (ZCOUNT over the geohash cell of ARGV[12] bits per axis that holds the centre), searches the
-- circle expected to hold about 1.6x `count` points, and doubles its radius while it holds
-- fewer than `count` matches, ending with the plain query. That is exact: once a circle of
-- radius r holds `count` matches, every match outside it is farther than each of them. For a
-- box, the matches are the circle's points that pass Redis's own box test (ported below with
-- the same floating-point operations). Farthest-first searches have no such shortcut and run
-- the plain query.
--
-- A layer of more than ARGV[13] places is left to the gateway (it answers {2, centre score}):
-- there one GEOSEARCH could read the whole layer (~30 ms at 100,000), and the density estimate
-- cannot bound what a circle reads when places cluster, so the gateway counts candidates
-- exactly and pages over them (geo.rs, geo_count.lua, geo_scan.lua).
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
-- ARGV[12] geohash step (bits per axis) of the density cell, chosen for the area's size
-- ARGV[13] most places a layer may hold for a search here
-- Returns {0} when the centre member does not exist, {2, centre score ('' for a point)} when
-- the layer is bigger than ARGV[13], else {1, centre score, hits}, hits being GEOSEARCH's
-- reply: {{member, distance (string, 4 decimals), score}, ...}.

local key = KEYS[1]
local count = tonumber(ARGV[11])
local per_unit = tonumber(ARGV[9])
local from
local score
local lon, lat
if ARGV[1] == 'member' then
  score = redis.call('ZSCORE', key, ARGV[2])
  if not score then
    return {0}
  end
  local pos = redis.call('GEOPOS', key, ARGV[2])[1]
  lon, lat = tonumber(pos[1]), tonumber(pos[2])
  from = {'FROMMEMBER', ARGV[2]}
else
  score = ARGV[4]
  lon, lat = tonumber(ARGV[2]), tonumber(ARGV[3])
  from = {'FROMLONLAT', ARGV[2], ARGV[3]}
end
local centre = ARGV[1] == 'member' and score or ''
local size = redis.call('ZCARD', key)
if size > tonumber(ARGV[13]) then
  return {2, centre}
end

local function search(shape, limit, extra)
  local args = {'GEOSEARCH', key}
  for _, a in ipairs(from) do args[#args + 1] = a end
  for _, a in ipairs(shape) do args[#args + 1] = a end
  args[#args + 1] = ARGV[10]
  if limit then
    args[#args + 1] = 'COUNT'
    args[#args + 1] = limit
  end
  for _, a in ipairs({'WITHDIST', 'WITHHASH', extra}) do args[#args + 1] = a end
  return redis.call(unpack(args))
end

local plain
if ARGV[5] == 'BYBOX' then
  plain = {'BYBOX', ARGV[6], ARGV[7], ARGV[8]}
else
  plain = {'BYRADIUS', ARGV[6], ARGV[8]}
end

-- Redis geohash_helper.c: geohashGetLatDistance, geohashGetDistance,
-- geohashGetDistanceIfInRectangle (operation for operation, so the results are identical).
local D_R = math.pi / 180.0
local EARTH = 6372797.560856
local function lat_distance(lat1, lat2)
  return EARTH * math.abs(lat2 * D_R - lat1 * D_R)
end
local function distance(lon1, lat1, lon2, lat2)
  local lon1r, lon2r = lon1 * D_R, lon2 * D_R
  local v = math.sin((lon2r - lon1r) / 2)
  if v == 0.0 then
    return lat_distance(lat1, lat2)
  end
  local lat1r, lat2r = lat1 * D_R, lat2 * D_R
  local u = math.sin((lat2r - lat1r) / 2)
  local a = u * u + math.cos(lat1r) * math.cos(lat2r) * v * v
  return 2.0 * EARTH * math.asin(math.sqrt(a))
end

if ARGV[10] == 'ASC' and size > count then
  local step = tonumber(ARGV[12])
  local span = 2 ^ (52 - 2 * step)
  local low = math.floor(tonumber(score) / span) * span
  local near = redis.call('ZCOUNT', key, string.format('%.17g', low),
    '(' .. string.format('%.17g', low + span))
  if near > 0 then
    local metres_per_degree = EARTH * math.pi / 180
    local cell_h = 170.10225756 / 2 ^ step * metres_per_degree
    local cell_w = 360 / 2 ^ step * metres_per_degree * math.cos(math.rad(lat))
    local density = near / (cell_w * cell_h)
    local r = math.sqrt(count / (math.pi * density)) * 1.25 / per_unit
    if ARGV[5] == 'BYRADIUS' then
      local radius = tonumber(ARGV[6])
      while r < radius do
        local hits = search({'BYRADIUS', string.format('%.17g', r), ARGV[8]}, ARGV[11])
        if #hits >= count then
          return {1, centre, hits}
        end
        r = r * 2
      end
    else
      local width_m = tonumber(ARGV[6]) * per_unit
      local height_m = tonumber(ARGV[7]) * per_unit
      -- Past half the box's width plus height the circle holds the whole box: plain is cheaper.
      while r * per_unit < (width_m + height_m) / 2 do
        local circle = search({'BYRADIUS', string.format('%.17g', r), ARGV[8]}, nil, 'WITHCOORD')
        local hits = {}
        for _, h in ipairs(circle) do
          local x, y = tonumber(h[4][1]), tonumber(h[4][2])
          if lat_distance(y, lat) <= height_m / 2 and distance(x, lat, lon, lat) <= width_m / 2 then
            hits[#hits + 1] = {h[1], h[2], h[3]}
            if #hits == count then
              return {1, centre, hits}
            end
          end
        end
        r = r * 2
      end
    end
  end
end
return {1, centre, search(plain, ARGV[11])}
