-- renew: KEYS[1] = record key; ARGV = owner, lease_until, grace in ms
-- Replies {'ok'} | {'lost'} | {'corrupt', reason}
local key = KEYS[1]
local owner, lease_until, grace = ARGV[1], ARGV[2], tonumber(ARGV[3])
local r, refusal = owned(key, owner)
if refusal then
  return refusal
end
-- A record released with steps (lease 0) stays released: only a takeover revives it.
if r.lease_until == '0' then
  return {'lost'}
end
r.lease_until = lease_until
-- The key outlives the lease by the grace, and its steps (kept_until) at least.
local now = caller_now(key, r)
write(key, r, now, now and covering(tonumber(lease_until) - now + grace, r.kept, now))
return {'ok'}
