-- renew: KEYS[1] = record key; ARGV = owner, lease_until, grace in ms
-- Replies {'ok'} | {'lost'} | {'corrupt', reason}
local key = KEYS[1]
local owner, lease_until, grace = ARGV[1], ARGV[2], tonumber(ARGV[3])
local refusal, offset = owned(key, owner)
if refusal then
  return refusal
end
-- A record released with steps (lease 0) stays released: only a takeover revives it.
if redis.call('HGET', key, 'lease_until') == '0' then
  return {'lost'}
end
local kept = redis.call('HGET', key, 'steps_kept_until')
refusal = bad_kept_until(kept)
if refusal then
  return refusal
end
redis.call('HSET', key, 'lease_until', lease_until)
-- The key outlives the lease by the grace, and its steps (kept_until) at least.
local caller_now = server_millis() + offset
redis.call('PEXPIRE', key, covering(tonumber(lease_until) - caller_now + grace, kept, caller_now))
return {'ok'}
