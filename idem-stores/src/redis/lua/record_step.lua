-- record_step: KEYS[1] = record key; ARGV = owner, step name, value, kept_until
-- Replies {'ok'} | {'lost'} | {'corrupt', reason}
local key = KEYS[1]
local owner, name, value, kept_until = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local r, refusal = owned(key, owner)
if refusal then
  return refusal
end
if r.kept ~= '' and before(kept_until, r.kept) then
  kept_until = r.kept
end
r.kept = kept_until
local found = false
for i = 1, #r.steps, 2 do
  if r.steps[i] == name then
    r.steps[i + 1] = value
    found = true
    break
  end
end
if not found then
  r.steps[#r.steps + 1] = name
  r.steps[#r.steps + 1] = value
end
-- The key must last until the steps' kept_until; an expiry already longer, or none (PTTL -1),
-- stays.
local ttl = redis.call('PTTL', key)
local now = caller_now(key, r)
local remaining = tonumber(kept_until) - now
if ttl >= 0 and ttl < remaining then
  write(key, r, now, remaining)
else
  redis.call('SET', key, encode(r), 'KEEPTTL')
end
return {'ok'}
