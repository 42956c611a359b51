-- Per-client limits for the partner API, REST and gRPC: sorts each request into a class
-- that the local_ratelimit filter listed after it limits per client address
-- (envoy.yaml, `client_limits`), in the request header x-yieldagent-client:
--
--   failing  any request from an address whose partner credentials failed FAILURES
--            times within WINDOW seconds (a 401, or gRPC's UNAUTHENTICATED), until
--            that window ends;
--   public   otherwise, a request that no partner key authorizes: every method and
--            path but the keyed ones below (so the wallet poll, the catalog, stats,
--            the healthcheck, the docs and unknown paths), whatever headers it sends.
--
-- Keyed requests from other addresses get no class: the gRPC service limits them per
-- partner once authenticated. A client's own x-yieldagent-client header is dropped.
--
-- Failures are counted per Envoy worker (each has its own Lua state), so with N
-- workers an address may fail up to N * FAILURES times in a window before it is
-- marked. At most MAX_TRACKED addresses are counted: when full, the count starts over.

local FAILURES, WINDOW, MAX_TRACKED = 5, 60, 10000
local HEADER = 'x-yieldagent-client'

-- The methods that need a partner key, as REST routes and as gRPC paths
-- (tests/rest/test_client_limits.py checks this list against the protos' http rules
-- and partner_permission options). A gRPC error without a message comes as headers
-- alone, so an UNAUTHENTICATED answer is seen in the response headers.
local KEYED = {
  'POST /api/v1/proxy/zerodev/smart-accounts',
  'GET /api/v1/proxy/zerodev/smart-accounts',
  'POST /api/v1/proxy/safe/smart-accounts',
  'GET /api/v1/proxy/safe/smart-accounts',
  'POST /api/v1/{chain_id}/wallets',
  'POST /api/v1/{chain_id}/wallets/{wallet}:deactivate',
  'POST /api/v1/{chain_id}/wallets/{wallet}:withdraw',
  'POST /api/v1/{chain_id}/wallets/{wallet}:run',
  'POST /api/v1/{chain_id}/wallets/{wallet}:top-up',
  'PUT /api/v1/{chain_id}/wallets/{wallet}/protocols',
  'GET /api/v1/{chain_id}/wallets/{wallet}/transactions',
  'GET /api/v1/{chain_id}/wallets/{wallet}/apr',
  'POST /api/v1/{chain_id}/wallets/{wallet}:claim-rewards',
  'GET /api/v1/{chain_id}/rewards/{wallet}/history',
  'GET /api/v1/{chain_id}/rewards/{wallet}',
  'POST /api/v1/{chain_id}/rewards/{wallet}',
  'POST /api/v1/optimizer/{chain_id}/optimize',
  'POST /yieldagent.v1.SmartAccountService/CreateSmartAccount',
  'POST /yieldagent.v1.SmartAccountService/GetSmartAccount',
  'POST /yieldagent.v1.SmartAccountService/CreateSafeAccount',
  'POST /yieldagent.v1.SmartAccountService/GetSafeAccount',
  'POST /yieldagent.v1.WalletService/ActivateWallet',
  'POST /yieldagent.v1.WalletService/DeactivateWallet',
  'POST /yieldagent.v1.WalletService/Withdraw',
  'POST /yieldagent.v1.WalletService/RunAgent',
  'POST /yieldagent.v1.WalletService/TopUp',
  'POST /yieldagent.v1.WalletService/UpdateProtocols',
  'POST /yieldagent.v1.WalletService/ListTransactions',
  'POST /yieldagent.v1.WalletService/GetApr',
  'POST /yieldagent.v1.WalletService/WatchWallet',
  'POST /yieldagent.v1.RewardService/ClaimRewards',
  'POST /yieldagent.v1.RewardService/ListRewardHistory',
  'POST /yieldagent.v1.RewardService/GetRewardStaking',
  'POST /yieldagent.v1.RewardService/SetRewardStaking',
  'POST /yieldagent.v1.OptimizerService/Optimize',
}

-- Each template as a Lua pattern, by method: a variable is one path segment.
local keyed = {}
for _, route in ipairs(KEYED) do
  local method, template = string.match(route, '^(%u+) (.+)$')
  local pattern = string.gsub(template, '[%^%$%(%)%%%.%[%]%*%+%-%?]', '%%%0')
  pattern = '^' .. string.gsub(pattern, '{[%w_]+}', '[^/]+') .. '$'
  keyed[method] = keyed[method] or {}
  table.insert(keyed[method], pattern)
end

local function is_keyed(method, path)
  for _, pattern in ipairs(keyed[method] or {}) do
    if string.find(path, pattern) then return true end
  end
  return false
end

local failures, tracked = {}, 0 -- address -> {count, since}

local function address_of(handle)
  local remote = handle:streamInfo():downstreamRemoteAddress() or ''
  return string.match(remote, '^%[(.*)%]:%d+$') or string.match(remote, '^(.*):%d+$') or remote
end

function envoy_on_request(handle)
  local headers = handle:headers()
  headers:remove(HEADER)
  local record = failures[address_of(handle)]
  if record and os.time() - record.since < WINDOW and record.count >= FAILURES then
    headers:add(HEADER, 'failing')
    return
  end
  local path = string.match(headers:get(':path') or '', '^[^?]*')
  if not is_keyed(headers:get(':method') or '', path) then headers:add(HEADER, 'public') end
end

function envoy_on_response(handle)
  local headers = handle:headers()
  local status = headers:get('x-yieldagent-status') or headers:get(':status')
  if status ~= '401' and headers:get('grpc-status') ~= '16' then return end
  local address, now = address_of(handle), os.time()
  local record = failures[address]
  if record == nil or now - record.since >= WINDOW then
    if record == nil then
      if tracked >= MAX_TRACKED then failures, tracked = {}, 0 end
      tracked = tracked + 1
    end
    failures[address] = {count = 1, since = now}
  else
    record.count = record.count + 1
  end
end
