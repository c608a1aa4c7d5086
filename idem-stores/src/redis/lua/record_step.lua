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
-- The key must last until the steps' kept_until: its expiry (the anchor, on the caller's
-- clock) moves out to it if it falls earlier; an expiry already longer, or none, stays.
local now = caller_now(key, r)
if now and before(r.anchor, kept_until) then
  write(key, r, now, tonumber(kept_until) - now)
else
  redis.call('SET', key, encode(r), 'KEEPTTL')
end
return {'ok'}
