-- wrk request generator for ./scripts/bench: one script for every gateway row.
-- Environment (set by bench/driver.py):
--   BENCH_SCENARIO  checkin | uv | ratelimit | seckill | seckill_soldout | dedup | nearby |
--                   lock_acquire | lock_release | enqueue | claim_ack,
--                   and the soak's (bench/soak.py): healthz | checkin_one | ratelimit_one,
--                   and webdis's UV add (bench/peers.py): webdis_uv
--   BENCH_BASE      first user id of this run (seckill: ids must be unique across runs,
--                   since a second purchase by the same user is a 409, not a sale)
-- Requests are built up front (a pool per thread, cycled) so wrk spends its CPU on I/O, not
-- Lua: the load generator shares the machine's cores with the gateway and Redis.

local scenario = os.getenv("BENCH_SCENARIO") or "checkin"
local base = tonumber(os.getenv("BENCH_BASE") or "0")
local json = { ["Content-Type"] = "application/json" }
local POOL = 4096

local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end

local pool, i, tid_n, step, next_user = {}, 0, 0, 1, 0

local function build()
  if scenario == "checkin" then
    return wrk.format("POST", "/v1/checkins/" .. math.random(0, 999999))
  elseif scenario == "uv" then
    return wrk.format("POST", "/v1/uv/bench", json,
      '{"visitor":"v' .. math.random(0, 999999) .. '"}')
  elseif scenario == "ratelimit" then
    return wrk.format("POST", "/v1/ratelimit/check", json,
      '{"key":"user-' .. math.random(0, 9999) ..
      '","max_burst":100,"count_per_period":50,"period":1,"quantity":1}')
  elseif scenario == "dedup" then
    local items = {}
    for k = 1, 10 do items[k] = '"news-' .. math.random(0, 49999) .. '"' end
    return wrk.format("POST", "/v1/dedup/bench/filter", json,
      '{"items":[' .. table.concat(items, ",") .. '],"mark_seen":true}')
  elseif scenario == "nearby" then
    return wrk.format("GET",
      "/v1/geo/bench/nearby?lon=116.40&lat=39.90&radius=5&unit=km&count=20&order=asc")
  elseif scenario == "lock_acquire" then
    -- One owner: a name still held from an earlier request is extended (200), never refused.
    return wrk.format("POST", "/v1/locks/bench-" .. math.random(0, 999999), json,
      '{"owner":"bench","ttl_ms":1000}')
  elseif scenario == "lock_release" then
    return wrk.format("DELETE", "/v1/locks/bench-" .. math.random(0, 999999) ..
      "?owner=bench&token=1")
  elseif scenario == "enqueue" then
    return wrk.format("POST", "/v1/queues/bench/jobs", json,
      '{"payload":{"to":"user@example.com","template":"welcome","locale":"en"}}')
  elseif scenario == "claim_ack" then
    return wrk.format("POST", "/v1/queues/bench-claim/claim", json, '{"visibility_ms":60000}')
  elseif scenario == "webdis_uv" then
    -- webdis's own form of the UV add: the command in the path (bench/peers.py).
    return wrk.format("GET", "/PFADD/bench:wd/v" .. math.random(0, 999999))
  elseif scenario == "healthz" then
    return wrk.format("GET", "/healthz")
  elseif scenario == "checkin_one" then
    return wrk.format("POST", "/v1/checkins/1")
  elseif scenario == "ratelimit_one" then
    return wrk.format("POST", "/v1/ratelimit/check", json,
      '{"key":"soak","max_burst":100,"count_per_period":50,"period":1,"quantity":1}')
  elseif scenario == "seckill_soldout" then
    return wrk.format("POST", "/v1/seckill/vouchers/bench-soldout/orders", json,
      '{"user_id":' .. math.random(0, 999999) .. '}')
  end
  error("unknown BENCH_SCENARIO " .. scenario)
end

function init(args)
  tid_n = tonumber(tid) or 0
  math.randomseed(os.time() * 1000 + tid_n * 7919 + base)
  -- Threads interleave ids (tid, tid + 16, ...): unique without coordination, for up to 16.
  step, next_user = 16, base + tid_n
  if scenario ~= "seckill" then
    for k = 1, POOL do pool[k] = build() end
  end
end

-- claim + ack: each claimed job's ack is sent next (from the same thread), so requests
-- alternate between claims and acks. Defined only for that row: wrk reads every response body
-- when a `response` function exists.
local acks = {}
if scenario == "claim_ack" then
  function response(status, headers, body)
    local id, receipt = string.match(body or "", '"id":"([^"]+)".-"receipt":"([^"]+)"')
    if id then
      acks[#acks + 1] = wrk.format("POST", "/v1/queues/bench-claim/jobs/" .. id .. "/ack",
        json, '{"receipt":"' .. receipt .. '"}')
    end
  end
end

function request()
  if #acks > 0 then
    return table.remove(acks)
  end
  if scenario == "seckill" then
    local user = next_user
    next_user = next_user + step
    return wrk.format("POST", "/v1/seckill/vouchers/bench/orders", json,
      '{"user_id":' .. user .. '}')
  end
  i = i % POOL + 1
  return pool[i]
end
