-- complete: KEYS[1] = record key
-- ARGV = owner, fingerprint, outcome ('ok' | 'err' | 'aborted'), body, expires_at
-- Replies {'ok'} | {'lost'} | {'corrupt', reason}
local key = KEYS[1]
local owner, fingerprint, outcome, body, expires_at = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

local value = redis.pcall('GET', key)
local anchor = type(value) == 'string' and held_anchor(value, owner)
if not anchor then
  local r, refusal = owned(key, owner)
  if refusal then
    if r and r.state == 'completed' and r.owner == owner then
      -- A retry of this very completion whose reply was lost.
      return {'ok'}
    end
    return refusal
  end
  anchor = r.anchor
end
local now = caller_now(key, {anchor = anchor})
write(key, {state = 'completed', fingerprint = fingerprint, owner = owner, outcome = outcome,
  expires_at = expires_at, body = body}, now, now and tonumber(expires_at) - now)
redis.call('PUBLISH', key, 'completed')
return {'ok'}
