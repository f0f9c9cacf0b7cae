-- Renew a lock still held by this owner and token; the fencing counter keeps outliving it.
-- KEYS[1] the holder   KEYS[2] the fencing counter
-- ARGV[1] owner   ARGV[2] token   ARGV[3] ttl, ms   ARGV[4] the counter's grace, ms
-- Returns  { 1, expires_at_ms } when renewed, { 0 } when not held by them.
if redis.call('GET', KEYS[1]) ~= ARGV[1] .. '\n' .. ARGV[2] then
  return { 0 }
end
local ttl, grace = tonumber(ARGV[3]), tonumber(ARGV[4])
local clock = redis.call('TIME')
redis.call('PEXPIRE', KEYS[1], ttl)
local fence = redis.call('PTTL', KEYS[2])
if fence == -2 then
  -- Gone (deleted by hand): the holder's token is the last one handed out.
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ttl + grace)
elseif fence < ttl + grace then
  redis.call('PEXPIRE', KEYS[2], ttl + grace)
end
return { 1, string.format('%.0f', tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000) + ttl) }
