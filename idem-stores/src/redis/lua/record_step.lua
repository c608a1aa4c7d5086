-- record_step: KEYS[1] = record key; ARGV = owner, step name, value, kept_until
-- Replies {'ok'} | {'lost'} | {'corrupt', reason}
local key = KEYS[1]
local owner, name, value, kept_until = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local refusal, offset = owned(key, owner)
if refusal then
  return refusal
end
local kept = redis.call('HGET', key, 'steps_kept_until')
refusal = bad_kept_until(kept)
if refusal then
  return refusal
end
if kept and before(kept_until, kept) then
  kept_until = kept
end
redis.call('HSET', key, STEP_PREFIX .. name, value, 'steps_kept_until', kept_until)
-- The key must last until the steps' kept_until; an expiry already longer, or none (PTTL -1),
-- stays.
local remaining = tonumber(kept_until) - (server_millis() + offset)
local ttl = redis.call('PTTL', key)
if ttl >= 0 and ttl < remaining then
  redis.call('PEXPIRE', key, expiry(remaining))
end
return {'ok'}
