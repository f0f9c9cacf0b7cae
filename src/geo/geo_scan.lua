-- One page of a layer's members whose scores fall in the given ranges, for a search the
-- gateway finishes itself (see geo.rs): a bounded number per call, so a search over a whole
-- layer at its cap never holds Redis for long. A page resumes at the last score it returned
-- (skipping the members of that score already returned), not at an offset: ZRANGEBYSCORE walks
-- an offset member by member, which cost ~40 ms deep into a 100,000-member layer.
-- KEYS[1]  the layer's geo set
-- ARGV[1]  most members to return
-- ARGV[2]  the range to resume in (1-based)
-- ARGV[3]  the score to resume at in it ('' for the range's start)
-- ARGV[4]  members with exactly that score already returned
-- ARGV[5..] score ranges as pairs: low (inclusive), high (exclusive)
-- Returns  {range, score, skip, member, score, member, score, ...}: the first three are the
--          next call's ARGV[2..4]; the range is past the last when the scan is done
local budget = tonumber(ARGV[1])
local at, from, skip = tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local ranges = (#ARGV - 4) / 2
local out = { 0, '', 0 }
while at <= ranges and budget > 0 do
  local lo = from ~= '' and from or ARGV[3 + 2 * at]
  local page = redis.call('ZRANGEBYSCORE', KEYS[1], lo, '(' .. ARGV[4 + 2 * at],
    'WITHSCORES', 'LIMIT', skip, budget)
  for j = 1, #page do out[#out + 1] = page[j] end
  local got = #page / 2
  budget = budget - got
  if budget > 0 then
    at, from, skip = at + 1, '', 0
  else
    local last = tonumber(page[#page])
    local same = 0
    for j = #page, 2, -2 do
      if tonumber(page[j]) ~= last then break end
      same = same + 1
    end
    if same == got and tonumber(lo) == last then
      skip = skip + got
    else
      skip = same
    end
    from = page[#page]
  end
end
out[1], out[2], out[3] = at, from, skip
return out
