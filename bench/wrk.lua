-- wrk request generator for ./scripts/bench: one script for every gateway row.
-- Environment (set by bench/driver.py):
--   BENCH_SCENARIO  checkin | uv | ratelimit | seckill | seckill_soldout | dedup | nearby |
--                   lock_acquire | lock_release | enqueue | claim_ack,
--                   and the soak's (bench/soak.py): healthz | checkin_one | ratelimit_one,
--                   and webdis's own forms (bench/peers.py): webdis_uv | webdis_seckill |
--                   webdis_lock | webdis_enqueue
--   BENCH_BASE      first user id of this run (seckill: ids must be unique across runs,
--                   since a second purchase by the same user is a 409, not a sale; the
--                   webdis purchase and enqueue rows number buyers and job ids the same way)
--   BENCH_SHA       webdis_seckill, webdis_enqueue: the SHA of bench/lua/seckill.lua or
--                   enqueue.lua, loaded into Redis by the harness
-- Requests are built up front (a pool per thread, cycled) so wrk spends its CPU on I/O, not
-- Lua: the load generator shares the machine's cores with the gateway and Redis.

local scenario = os.getenv("BENCH_SCENARIO") or "checkin"
local base = tonumber(os.getenv("BENCH_BASE") or "0")
local sha = os.getenv("BENCH_SHA") or ""
-- The enqueue row's payload in webdis's URL form (it percent-decodes each argument).
local WEBDIS_PAYLOAD =
  "%7B%22to%22%3A%22user%40example.com%22%2C%22template%22%3A%22welcome%22%2C%22locale%22%3A%22en%22%7D"
-- Scenarios whose every request names a new buyer or job: built per request, not pooled.
local FRESH = { seckill = true, webdis_seckill = true, webdis_enqueue = true }
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
  elseif scenario == "webdis_lock" then
    return wrk.format("GET", "/SET/bench:wlk:" .. math.random(0, 999999) .. "/bench/NX/PX/1000")
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
  if not FRESH[scenario] then
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
  if FRESH[scenario] then
    local user = next_user
    next_user = next_user + step
    if scenario == "webdis_seckill" then
      return wrk.format("GET", "/EVALSHA/" .. sha
        .. "/4/bench:wsk/bench:wsk:buyers/bench:wsk:uo/bench:wsk:orders/u" .. user)
    elseif scenario == "webdis_enqueue" then
      return wrk.format("GET", "/EVALSHA/" .. sha .. "/2/bench:q:%7Bw%7D:due/bench:q:%7Bw%7D:pay/j"
        .. user .. "/" .. WEBDIS_PAYLOAD)
    end
    return wrk.format("POST", "/v1/seckill/vouchers/bench/orders", json,
      '{"user_id":' .. user .. '}')
  end
  i = i % POOL + 1
  return pool[i]
end
