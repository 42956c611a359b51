-- Per-client limits for the partner API, REST and gRPC: sorts each request into a class
-- that the local_ratelimit filter listed after it limits per client
-- (envoy.yaml, `client_limits`), in the request header x-yieldagent-client, and names
-- the client in x-yieldagent-client-address: an IPv4 address, or an IPv6 address's /64
-- (one host's network: rotating addresses inside it makes no new client).
--
--   failing  any request from a client whose partner credentials failed FAILURES
--            times within WINDOW seconds (a 401, or gRPC's UNAUTHENTICATED), until
--            that window ends;
--   public   otherwise, a request that no partner key authorizes: every method and
--            path but the keyed ones below (so the wallet poll, the catalog, stats,
--            the healthcheck, the docs and unknown paths), whatever headers it sends.
--            On the REST port that includes every request of a gRPC content type,
--            which that port refuses (415 or 404) before any key is read.
--
-- Keyed requests from other clients get no class: the gRPC service limits them per
-- partner once authenticated. A client's own x-yieldagent-client* headers are dropped.
--
-- Failures are counted per Envoy worker (each has its own Lua state), so with N
-- workers a client may fail up to N * FAILURES times in a window before it is
-- marked. At most MAX_TRACKED clients are counted: past that, the one whose count
-- started longest ago is forgotten first.
local FAILURES, WINDOW, MAX_TRACKED = 5, 60, 10000
local HEADER = 'x-yieldagent-client'
local ADDRESS_HEADER = 'x-yieldagent-client-address'

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
  'GET /api/v1/{chain_id}/wallets/{wallet}/apr/tokens',
  'GET /api/v1/{chain_id}/wallets/{wallet}/performance',
  'GET /api/v1/{chain_id}/wallets/{wallet}/earnings',
  'POST /yieldagent.v1.HistoryService/GetWalletPerformance',
  'POST /yieldagent.v1.HistoryService/GetWalletEarnings',
  'POST /yieldagent.v1.HistoryService/ListWalletTokenAprs',
  'GET /api/v1/{chain_id}/wallets/{wallet}/deposits',
  'GET /api/v1/{chain_id}/wallets/{wallet}/fee',
  'GET /api/v1/{chain_id}/wallets/{wallet}/limit',
  'POST /yieldagent.v1.WalletDetailService/ListDeposits',
  'POST /yieldagent.v1.WalletDetailService/GetFee',
  'POST /yieldagent.v1.WalletDetailService/GetDepositLimit',
  'GET /api/v1/{chain_id}/wallets/{wallet}/protocols',
  'GET /api/v1/{chain_id}/wallets/{wallet}/constraints',
  'PUT /api/v1/{chain_id}/wallets/{wallet}/constraints',
  'GET /api/v1/{chain_id}/wallets/{wallet}/whitelist',
  'GET /api/v1/{chain_id}/wallets/{wallet}/executions',
  'GET /api/v1/{chain_id}/wallets/{wallet}/executions/{execution_id}/logs',
  'GET /api/v1/{chain_id}/wallets/{wallet}/logs',
  'POST /yieldagent.v1.WalletDetailService/ListWalletProtocols',
  'POST /yieldagent.v1.WalletDetailService/GetConstraints',
  'POST /yieldagent.v1.WalletDetailService/UpdateConstraints',
  'POST /yieldagent.v1.WalletDetailService/GetWhitelist',
  'POST /yieldagent.v1.WalletDetailService/ListExecutions',
  'POST /yieldagent.v1.WalletDetailService/ListExecutionLogs',
  'POST /yieldagent.v1.WalletDetailService/ListWalletLogs',
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

-- Each template as a Lua pattern, by port (REST routes, gRPC paths) and method: a
-- variable is one path segment.
local keyed = {rest = {}, grpc = {}}
for _, route in ipairs(KEYED) do
  local method, template = string.match(route, '^(%u+) (.+)$')
  local port = string.find(template, '^/api/') and keyed.rest or keyed.grpc
  local pattern = string.gsub(template, '[%^%$%(%)%%%.%[%]%*%+%-%?]', '%%%0')
  pattern = '^' .. string.gsub(pattern, '{[%w_]+}', '[^/]+') .. '$'
  port[method] = port[method] or {}
  table.insert(port[method], pattern)
end

local function is_keyed(port, method, path)
  for _, pattern in ipairs(port[method] or {}) do
    if string.find(path, pattern) then return true end
  end
  return false
end

-- The client an address belongs to: an IPv4 address as it is (an IPv4-mapped IPv6
-- address as its IPv4), an IPv6 address as its first 64 bits, "<hex>:<hex>:<hex>:<hex>::/64".
local function client_of(address)
  if not string.find(address, ':', 1, true) then return address end
  local mapped = string.match(string.lower(address), '^::ffff:(%d+%.%d+%.%d+%.%d+)$')
  if mapped then return mapped end
  address = string.match(address, '^[^%%]*') -- without a zone
  local left, right = address, ''
  local gap = string.find(address, '::', 1, true)
  if gap then left, right = string.sub(address, 1, gap - 1), string.sub(address, gap + 2) end
  local groups = {}
  for group in string.gmatch(left, '[^:]+') do groups[#groups + 1] = group end
  if gap then
    local after = {}
    for group in string.gmatch(right, '[^:]+') do after[#after + 1] = group end
    local width = #after + ((after[#after] and string.find(after[#after], '.', 1, true)) and 1 or 0)
    for _ = 1, 8 - #groups - width do groups[#groups + 1] = '0' end
    for _, group in ipairs(after) do groups[#groups + 1] = group end
  end
  local prefix = {}
  for i = 1, 4 do
    prefix[i] = string.format('%x', tonumber(groups[i] or '0', 16) or 0)
  end
  return table.concat(prefix, ':') .. '::/64'
end

-- Failure counts by client ({count, since}), and the order they started in: a queue of
-- {client, record}; an entry whose record was replaced since is skipped (and dropped
-- when the queue grows to twice the clients it tracks).
local failures, tracked = {}, 0
local queue, first, last = {}, 1, 0

local function forget_oldest()
  while first <= last do
    local entry = queue[first]
    queue[first], first = nil, first + 1
    if failures[entry[1]] == entry[2] then
      failures[entry[1]], tracked = nil, tracked - 1
      return
    end
  end
end

local function compact()
  local kept = {}
  for i = first, last do
    local entry = queue[i]
    if failures[entry[1]] == entry[2] then kept[#kept + 1] = entry end
  end
  queue, first, last = kept, 1, #kept
end

local function note_failure(client, now)
  local record = failures[client]
  if record ~= nil and now - record.since < WINDOW then
    record.count = record.count + 1
    return
  end
  if record == nil then
    while tracked >= MAX_TRACKED do forget_oldest() end
    tracked = tracked + 1
  end
  record = {count = 1, since = now}
  failures[client] = record
  last = last + 1
  queue[last] = {client, record}
  if last - first + 1 > 2 * MAX_TRACKED then compact() end
end

local function is_failing(client, now)
  local record = failures[client]
  return record ~= nil and now - record.since < WINDOW and record.count >= FAILURES
end

local function address_of(handle)
  local remote = handle:streamInfo():downstreamRemoteAddress() or ''
  return string.match(remote, '^%[(.*)%]:%d+$') or string.match(remote, '^(.*):%d+$') or remote
end

function envoy_on_request(handle)
  local headers = handle:headers()
  headers:remove(HEADER)
  headers:remove(ADDRESS_HEADER)
  local client = client_of(address_of(handle))
  headers:add(ADDRESS_HEADER, client)
  if is_failing(client, os.time()) then
    headers:add(HEADER, 'failing')
    return
  end
  -- rest.lua, before this filter on the REST port only, records the request there.
  local rest = handle:streamInfo():dynamicMetadata():get('yieldagent') ~= nil
  local path = string.match(headers:get(':path') or '', '^[^?]*')
  local method = headers:get(':method') or ''
  local grpc = string.find(string.lower(headers:get('content-type') or ''), '^application/grpc')
  local by_key
  if rest then
    by_key = not grpc and is_keyed(keyed.rest, method, path)
  else
    by_key = is_keyed(keyed.grpc, method, path)
  end
  if not by_key then headers:add(HEADER, 'public') end
end

function envoy_on_response(handle)
  local headers = handle:headers()
  local status = headers:get('x-yieldagent-status') or headers:get(':status')
  if status ~= '401' and headers:get('grpc-status') ~= '16' then return end
  note_failure(client_of(address_of(handle)), os.time())
end

-- What tests/rest/test_client_limits.py runs inside Envoy (a script that loads this file).
return {client_of = client_of, note_failure = note_failure, is_failing = is_failing}
