-- reserve: KEYS[1] = record key
-- ARGV = now, owner, fingerprint, lease_until, expiry of the new key in ms (lease + grace),
--        abandoned_before (an in-progress record whose lease passed before it is abandoned,
--        unless its steps still hold the key), fencing token proposed by the claim, the longest
--        completed record replied ('' for any: idem-core's `max_record_len` of the call's
--        longest outcome)
-- Replies {'reserved'}
--       | {'took_over', previous owner, the record written}
--       | {'held', record} (this owner's own record: a retried request)
--       | {'existing', record} | {'too_long', length, fingerprint, expires_at}
--       | {'corrupt', reason}
-- Sent only when a plain `SET NX GET` found a record that is neither live nor another call's
-- in-progress record that is not abandoned: it judges again from what it reads, so a record
-- completed or taken meanwhile is answered as it stands.
-- This is Redis's copy of the reserve judgement (idem-core's `judge_reserve` is the rule; the
-- PostgreSQL statement and the DynamoDB conditions hold theirs), kept here so that deciding and
-- writing are one atomic step; the conformance kit's table of reserve cases checks they agree.
-- Fencing tokens stay below 2^53, so Lua's doubles hold them exactly.
local key = KEYS[1]
local now, owner, fingerprint, lease_until = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local px, abandoned_before, fencing = tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7])
local max_length = tonumber(ARGV[8])

local function claim(attempt, token, kept, steps)
  return {state = 'in_progress', fingerprint = fingerprint, owner = owner,
    lease_until = lease_until, fencing_token = string.format('%.0f', token),
    attempt = string.format('%.0f', attempt), anchor = '0', kept = kept, steps = steps}
end

local r, refusal, value = load_record(key)
if refusal then
  return refusal
end
if not r then
  write(key, claim(1, fencing, '', {}), tonumber(now), px)
  return {'reserved'}
end

if r.state == 'completed' then
  if before(now, r.expires_at) then
    -- Redis's copy of the size rule (idem-core's `check_record_len`), as in reserve_within.
    if max_length and #value > max_length then
      return {'too_long', #value, r.fingerprint, r.expires_at}
    end
    return {'existing', value}
  end
  write(key, claim(1, fencing, '', {}), tonumber(now), px)
  return {'reserved'}
end

if r.owner == owner then
  -- A retry of this very claim whose reply was lost.
  return {'held', value}
end
if before(now, r.lease_until) then
  return {'existing', value}
end
local same_call = r.fingerprint == fingerprint
local held_by_steps = #r.steps > 0 and before(now, r.kept)
if not same_call and (before(abandoned_before, r.lease_until) or held_by_steps) then
  return {'existing', value}
end
local token = math.max(fencing, tonumber(r.fencing_token) + 1)
local taken
if same_call then
  -- The same call resumes after its steps: they stay in the record.
  -- The attempt stops where the engine's counter does (u32).
  taken = claim(math.min(tonumber(r.attempt) + 1, 4294967295), token, r.kept, r.steps)
  write(key, taken, tonumber(now), covering(px, r.kept, tonumber(now)))
else
  taken = claim(1, token, '', {})
  write(key, taken, tonumber(now), px)
end
redis.call('PUBLISH', key, 'taken_over')
return {'took_over', r.owner, encode(taken)}
