"""What each operation of the partner REST API answers when it refuses, and why.

Every error status an operation documents comes with its reasons, each with an example
body. The reasons are read from where the answers are made:

- the edge (envoy/rest.lua, envoy/rest_check.lua), from the method's http rule: 422
  where a path, query or body value can have the wrong JSON type or the body be
  malformed; 404 where the path names a chain, a wallet or a token; 413 where a body is
  taken (Envoy buffers at most 1 MiB);
- the method's policy (its proto options, ``servicers.method_policy``): 401, 403 and 429
  where it needs a partner permission (the credentials, then the partner's rate limit);
  409 with ``Retry-After`` (a call with the same key still running) and 422 (a malformed
  key, or one used with another request) where it is idempotent;
- the method's use case: the domain errors it raises, declared per method in
  ``REFUSALS``, each with an example made by the domain's own check where there is one.
  What a use case raises cannot be read from outside it, so this is the one part
  written by hand; the contract tests hold it to what the service answers.

Every status and body goes through ``servicers.errors``, as the service's do: a 422
locates its fields where the http rule binds them. The contract tests
(tests/rest/test_contract_flow.py) provoke each documented status, or name it for review.

500 is declared where the partner contract lists it (activation, smart-account creation).
What any path may answer (no operation matches, oversized headers, the service down) is
said once, in the document's description.

The module is longer than the house's usual because ``REFUSALS`` is a table, one entry per
method, which reads best whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FieldDescriptor, MethodDescriptor

from yieldagent.catalog import load_catalog
from yieldagent.domain.addresses import parse_address, parse_addresses, parse_tx_hash
from yieldagent.domain.amounts import parse_amount
from yieldagent.domain.books.wallet_states import WalletStatus, transition
from yieldagent.domain.books.wallets import wallet_not_found
from yieldagent.domain.catalog import TokenInfo
from yieldagent.domain.constraints import RawConstraint, parse_constraints
from yieldagent.domain.dates import parse_iso
from yieldagent.domain.errors import (
    AccessDenied,
    AuthenticationFailed,
    ChainUnavailable,
    Conflict,
    InvalidInput,
    InvalidRequest,
    NotFound,
    NotImplementedYet,
    YieldAgentError,
)
from yieldagent.domain.money.deposits import DEPOSIT_TOO_LARGE, UNCONFIRMED_RETRY_SECONDS
from yieldagent.domain.money.withdrawals import check_minimum
from yieldagent.domain.pagination import page_request
from yieldagent.domain.partners.money_calls import LoggedCall, MoneyCall, MoneyCallLimit
from yieldagent.domain.partners.partners import INVALID_KEY
from yieldagent.domain.partners.rate_limits import RateLimiter
from yieldagent.domain.partners.smart_accounts import SafeChains, account_key, check_owner
from yieldagent.domain.ports.accounts import SmartAccount
from yieldagent.servicers import errors
from yieldagent.servicers.idempotency import reused
from yieldagent.servicers.method_policy import MethodPolicy

BODY_LIMIT = "1 MiB"
"""The largest body Envoy buffers (its default buffer limit); above it, 413."""

CHAIN = 8453
EOA = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
WALLET = "0xB3729F7e1Ab0B4a50E7De5599Ecc321B8775d30d"
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
TX_HASH = "0x" + "5e" * 32
EXAMPLE_REQUEST_ID = "1f0b6a52-8c3e-4f7d-9a21-0c5d2e8b7a44"


@dataclass(frozen=True, slots=True)
class Answer:
    """One reason an operation answers an error status, with an example of its body."""

    name: str
    """The example's key (unique within its status)."""
    status: int
    why: str
    """The reason, one sentence in a partner's words."""
    body: dict[str, Any]
    """The body as the service sends it, ``request_id`` left out."""
    retry_after: bool = False
    """Whether the answer carries ``Retry-After``."""


Refusal = tuple[str, YieldAgentError | None, str]
"""A domain error a use case raises (None: an unexpected failure, 500): a short name for
its example, the error and why."""


def _raised(check: Callable[..., object], *args: Any) -> YieldAgentError:
    """The error a domain check raises for ``args``: an example in its own words."""
    try:
        check(*args)
    except YieldAgentError as error:
        return error
    raise AssertionError(f"{check.__name__}{args!r} raised nothing")


def _usdc() -> TokenInfo:
    return load_catalog().token(CHAIN, USDC)


def _money_calls_limited() -> YieldAgentError:
    limit = MoneyCallLimit(_CallLog(), 10, lambda: 30.0)
    for _ in range(10):
        limit.check(1, CHAIN, WALLET)
    return _raised(limit.check, 1, CHAIN, WALLET)


class _CallLog:
    """A money call log in memory, for the example."""

    def __init__(self) -> None:
        self._calls: list[LoggedCall] = []

    def record(self, call: MoneyCall, since: float) -> tuple[int, Sequence[LoggedCall]]:
        self._calls.append(LoggedCall(len(self._calls) + 1, call.at))
        return len(self._calls), [c for c in self._calls if c.at >= since]

    def forget(self, call_id: int) -> None:
        self._calls = [c for c in self._calls if c.id != call_id]


def _rate_limited() -> YieldAgentError:
    limiter = RateLimiter(rate=10.0, burst=20.0, now=lambda: 0.0)
    for _ in range(20):
        limiter.check(1)
    return _raised(limiter.check, 1)


# What several use cases share ------------------------------------------------

_OTHER_PARTNER: Refusal = (
    "other_partner",
    AccessDenied("Access denied: the wallet belongs to another partner"),
    "The wallet belongs to another partner.",
)
_BAD_WALLET: Refusal = (
    "bad_address",
    _raised(parse_address, "0x12", ("wallet",)),
    "The wallet is not an address (0x and 40 hex characters).",
)
_BUSY: Refusal = (
    "wallet_busy",
    Conflict("Another operation on this wallet is in progress; retry", retry_after_seconds=5),
    "Another call holds the wallet: retry after `Retry-After` seconds.",
)
_CHAIN_DOWN: Refusal = (
    "chain_unavailable",
    ChainUnavailable("the node did not answer: connection refused"),
    "A chain node refused or did not answer; what was done is recorded: retry later.",
)
_UNEXPECTED: Refusal = (
    "unexpected",
    None,
    "An unexpected failure; nothing is kept for the Idempotency-Key.",
)
_BAD_PAGE: Refusal = (
    "bad_page",
    _raised(page_request, 0, 500, "newest"),
    "`page`, `limit` or `sort` is out of range.",
)
_UNCONFIRMED: Refusal = (
    "unconfirmed_deposit",
    Conflict(
        f"Deposit {TX_HASH} waits for 3 more confirmation(s); retry",
        retry_after_seconds=UNCONFIRMED_RETRY_SECONDS,
    ),
    "The deposit waits for confirmations: retry after `Retry-After` seconds.",
)


def _state(status: WalletStatus, action: str, why: str) -> Refusal:
    """The refusal of a call the wallet's state forbids (``wallet_states``)."""
    return "wallet_state", _raised(transition, status, action), why


REFUSALS: dict[str, tuple[Refusal, ...]] = {
    "Healthcheck": (),
    "GetConfig": (),
    "ListChains": (),
    "ListTokens": (),
    "ListProtocols": (
        (
            "bad_address",
            _raised(parse_address, "USDC", ("token",)),
            "The token is not an address.",
        ),
        _CHAIN_DOWN,
    ),
    "ListProtocolSupply": (
        (
            "bad_address",
            _raised(parse_address, "USDC", ("token",)),
            "The token is not an address.",
        ),
        _CHAIN_DOWN,
    ),
    "GetStats": (),
    "CreateSmartAccount": (
        (
            "bad_fields",
            _raised(account_key, "0x12", 10, "", (CHAIN,)),
            "The EOA is not an address, the chain is not supported, or the agent id is "
            "not 1 to 128 printable characters.",
        ),
        (
            "other_partner",
            _raised(check_owner, SmartAccount(CHAIN, EOA, "yield-agent", WALLET, 2), 1),
            "Another partner manages the account of this EOA and agent id.",
        ),
        _UNEXPECTED,
    ),
    "CreateSafeAccount": (
        (
            "bad_fields",
            _raised(account_key, "0x12", 10, "", (CHAIN,)),
            "The EOA is not an address, the chain is not supported, or the agent id is "
            "not 1 to 128 printable characters.",
        ),
        (
            "other_partner",
            _raised(check_owner, SmartAccount(CHAIN, EOA, "yield-agent", WALLET, 2), 1),
            "Another partner manages the account of this EOA and agent id.",
        ),
        (
            "no_safe_accounts",
            _raised(SafeChains(refusals={CHAIN: "YIELDAGENT_FEE_COLLECTOR is not set"}).on, CHAIN),
            "The service cannot create Safe accounts on this chain: it lacks a fee "
            "collector other than its operator, or the chain has no operator module.",
        ),
    ),
    "GetSafeAccount": (
        (
            "bad_fields",
            _raised(account_key, EOA, 10, "", (CHAIN,)),
            "The EOA is not an address, or the chain is not supported.",
        ),
        (
            "no_account",
            NotFound(f"No Safe account for {EOA} with agent id 'yield-agent' on chain {CHAIN}"),
            "No Safe account was created for this EOA, chain and agent id.",
        ),
        (
            "other_partner",
            _raised(check_owner, SmartAccount(CHAIN, EOA, "yield-agent", WALLET, 2), 1),
            "Another partner manages the account.",
        ),
    ),
    "GetSmartAccount": (
        (
            "bad_fields",
            _raised(account_key, EOA, 10, "", (CHAIN,)),
            "The EOA is not an address, or the chain is not supported.",
        ),
        (
            "no_account",
            NotFound(f"No smart account for {EOA} with agent id 'yield-agent' on chain {CHAIN}"),
            "No smart account was created for this EOA, chain and agent id.",
        ),
        (
            "other_partner",
            _raised(check_owner, SmartAccount(CHAIN, EOA, "yield-agent", WALLET, 2), 1),
            "Another partner manages the account.",
        ),
    ),
    "ActivateWallet": (
        (
            "bad_address",
            _raised(parse_addresses, {"wallet": "0x12", "eoa": EOA, "initial_token": USDC}),
            "An address is malformed, or no protocol is selected.",
        ),
        (
            "not_activable",
            InvalidRequest(f"{WALLET} is not a smart account created for {EOA}"),
            "The wallet is not a smart account created for the EOA, holds no deposit of the "
            "token, or the protocols or constraints do not fit the token.",
        ),
        (
            "deposit_too_large",
            AccessDenied(DEPOSIT_TOO_LARGE),
            "The deposit is above the activation limit, or another partner manages the "
            "smart account.",
        ),
        _state(
            WalletStatus.ACTIVATED,
            "activate",
            "The agent is active already, or the deposit was credited before.",
        ),
        _UNCONFIRMED,
        _BUSY,
        _CHAIN_DOWN,
        (
            "not_deployable",
            NotImplementedYet(
                f"Kernel (zerodev) account {WALLET} cannot be activated on chain 1: the "
                "service deploys no Kernel account (no registry package ships its bytecode) "
                "and sends no UserOperations. Create a Safe account "
                "(POST /api/v1/proxy/safe/smart-accounts) instead"
            ),
            "A Kernel (zerodev) account on a real chain: the service acts only for Safe "
            "accounts there.",
        ),
        _UNEXPECTED,
    ),
    "GetWallet": (
        (
            "bad_address",
            _raised(parse_address, "0x12", ("wallet",)),
            "The wallet (with `eoa`, the EOA) is not an address.",
        ),
    ),
    "DeactivateWallet": (
        _BAD_WALLET,
        _OTHER_PARTNER,
        _state(WalletStatus.DEACTIVATED, "deactivate", "The agent is not active."),
        _BUSY,
        _CHAIN_DOWN,
    ),
    "Withdraw": (
        (
            "bad_amount",
            _raised(parse_amount, "0", ("amount",)),
            "The amount is not a positive integer.",
        ),
        (
            "above_balance",
            InvalidRequest("Amount 5000000000 exceeds the withdrawable balance of 1000000000"),
            "The amount exceeds the withdrawable balance.",
        ),
        (
            "below_minimum",
            _raised(check_minimum, 1_000_000, _usdc(), Decimal(10)),
            "The amount is worth less than the minimum withdrawal "
            "(`YIELDAGENT_MIN_WITHDRAW_USD`); deactivation takes out a smaller balance.",
        ),
        _OTHER_PARTNER,
        _state(WalletStatus.DEACTIVATED, "withdraw", "The agent is not active."),
        _BUSY,
        _CHAIN_DOWN,
    ),
    "RunAgent": (
        _BAD_WALLET,
        _OTHER_PARTNER,
        _state(WalletStatus.DEACTIVATED, "run", "The agent is not active."),
        _BUSY,
        _CHAIN_DOWN,
    ),
    "TopUp": (
        (
            "bad_tx_hash",
            _raised(parse_tx_hash, "0x12", ("tx_hash",)),
            "`tx_hash` is missing or malformed.",
        ),
        (
            "not_a_deposit",
            InvalidRequest(f"Deposit transaction {TX_HASH} not found on the chain"),
            "The transaction is not on the chain, or is not a transfer of the wallet's "
            "token to it.",
        ),
        (
            "deposit_too_large",
            AccessDenied(DEPOSIT_TOO_LARGE),
            "The deposit is above the limit, or the wallet belongs to another partner.",
        ),
        _state(
            WalletStatus.DEACTIVATED,
            "top_up",
            "The agent is not active, or the deposit was credited before.",
        ),
        _UNCONFIRMED,
        _BUSY,
        _CHAIN_DOWN,
    ),
    "UpdateProtocols": (
        (
            "empty_list",
            InvalidInput.field(("protocols",), "List should have at least 1 item", "too_short"),
            "The list is empty.",
        ),
        (
            "unknown_protocol",
            InvalidRequest(
                "Invalid protocol name: aave_v9; protocols for USDC: aave, compound, moonwell"
            ),
            "A name is not one of the token's protocols.",
        ),
        _OTHER_PARTNER,
        _state(WalletStatus.DEACTIVATED, "update_protocols", "The agent is not active."),
        _BUSY,
    ),
    "ListTransactions": (_BAD_WALLET, _BAD_PAGE, _OTHER_PARTNER),
    "GetApr": (
        (
            "bad_dates",
            _raised(parse_iso, "yesterday", ("start_date",)),
            "A date is not ISO 8601, or `end_date` is not after `start_date`.",
        ),
        _OTHER_PARTNER,
        _CHAIN_DOWN,
    ),
    "ClaimRewards": (
        _BAD_WALLET,
        ("nothing_to_claim", InvalidRequest("No rewards to claim"), "Nothing accrued to claim."),
        _OTHER_PARTNER,
        ("wallet_state", Conflict("Agent not active"), "The agent is not active."),
        _BUSY,
        _CHAIN_DOWN,
    ),
    "ListRewardHistory": (_BAD_WALLET, _BAD_PAGE, _OTHER_PARTNER),
    "GetProtocolHistory": (
        (
            "bad_query",
            _raised(parse_iso, "yesterday", ("from",)),
            "A date is not ISO 8601, `to` is before `from`, the interval is not hour or "
            "day, or the token is not an address.",
        ),
    ),
    "GetWalletPerformance": (
        _BAD_WALLET,
        (
            "bad_dates",
            _raised(parse_iso, "yesterday", ("from_date",)),
            "`from_date` is not ISO 8601.",
        ),
        _OTHER_PARTNER,
        _CHAIN_DOWN,
    ),
    "ListWalletTokenAprs": (
        _BAD_WALLET,
        (
            "bad_query",
            InvalidInput.field(("token_price",), "Input should be greater than 0"),
            "`token_price` is not positive, or `period` is not all or day.",
        ),
        _OTHER_PARTNER,
        _CHAIN_DOWN,
    ),
    "GetWalletEarnings": (
        _BAD_WALLET,
        (
            "bad_query",
            _raised(parse_iso, "yesterday", ("from",)),
            "A date is not ISO 8601, `to` is not after `from`, or the interval is not day or hour.",
        ),
        _OTHER_PARTNER,
    ),
    "GetRewardStaking": (_BAD_WALLET, _BAD_PAGE, _OTHER_PARTNER),
    "ListDeposits": (_BAD_WALLET, _OTHER_PARTNER),
    "GetFee": (_BAD_WALLET, _OTHER_PARTNER),
    "GetDepositLimit": (
        (
            "bad_address",
            _raised(parse_addresses, {"wallet": WALLET, "eoa": "0x12"}),
            "The wallet or `eoa` is not an address.",
        ),
        (
            "not_the_owner",
            InvalidRequest(f"{EOA} is not the owner of wallet {WALLET}"),
            "`eoa` is not the wallet's owner.",
        ),
        _OTHER_PARTNER,
    ),
    "SetRewardStaking": (
        (
            "missing_field",
            InvalidInput.field(("is_staked",), "Field required", "missing"),
            "`is_staked` is missing.",
        ),
        _OTHER_PARTNER,
        _state(
            WalletStatus.DEACTIVATING,
            "set_reward_staking",
            "The wallet is being deactivated.",
        ),
        _BUSY,
    ),
    "ListWalletProtocols": (_BAD_WALLET, _OTHER_PARTNER, _CHAIN_DOWN),
    "GetConstraints": (_BAD_WALLET, _OTHER_PARTNER),
    "UpdateConstraints": (
        (
            "bad_constraints",
            _raised(parse_constraints, [RawConstraint("min_protocols", {"min_protocols": 0})]),
            "A constraint's kind or parameters are malformed.",
        ),
        (
            "cannot_be_met",
            InvalidRequest("Constraints cannot be met: min_protocols 5 with 4 usable protocols"),
            "A constraint names a protocol the token does not have, or the wallet's funds "
            "could not be placed under them.",
        ),
        _OTHER_PARTNER,
        _state(WalletStatus.DEACTIVATED, "update_constraints", "The agent is not active."),
        _BUSY,
        _CHAIN_DOWN,
    ),
    "GetWhitelist": (_BAD_WALLET, _OTHER_PARTNER),
    "ListExecutions": (_BAD_WALLET, _BAD_PAGE, _OTHER_PARTNER),
    "ListExecutionLogs": (
        _BAD_WALLET,
        _BAD_PAGE,
        (
            "no_execution",
            NotFound(
                f"Execution 0c1f5e0e-6d9b-4a1e-9f3e-2b7c8d9e0a11 not found for wallet {WALLET}"
            ),
            "No execution of the wallet has this id.",
        ),
        _OTHER_PARTNER,
    ),
    "ListWalletLogs": (_BAD_WALLET, _BAD_PAGE, _OTHER_PARTNER),
    "Optimize": (
        (
            "bad_fields",
            _raised(parse_amount, "1e6", ("total_capital",)),
            "An amount or address is malformed, or the current allocations exceed `total_capital`.",
        ),
        (
            "not_supported",
            InvalidRequest(f"Token 0x{'00' * 20} is not supported on chain {CHAIN}"),
            "The token or a protocol is not supported on the chain, or the constraints "
            "cannot be met.",
        ),
        _CHAIN_DOWN,
    ),
}
"""The domain errors each method's use case raises (by method name), with an example
and the reason; the rest of an operation's answers follow from its policy and route."""


# From the route and the policy ------------------------------------------------

_EDGE_TEXT = {
    FieldDescriptor.TYPE_INT32: "abc",
    FieldDescriptor.TYPE_INT64: "abc",
    FieldDescriptor.TYPE_UINT32: "abc",
    FieldDescriptor.TYPE_UINT64: "abc",
    FieldDescriptor.TYPE_BOOL: "maybe",
    FieldDescriptor.TYPE_STRING: "%ff",
}
"""The path and query types the edge reads, in the order the example prefers, each with a
value it refuses: the transcoder a number or bool it cannot parse, rest_check.lua text
that is not UTF-8."""
_EDGE_UNICODE = (
    "Input should be a valid string, unable to parse raw data as a unicode string",
    "string_unicode",
)
_EDGE_JSON = ("JSON decode error: expected a key at position 2", "json_invalid")
_EDGE_JSON_ARRAY = ("JSON decode error: unexpected end of input at position 2", "json_invalid")

_PATH_NOT_FOUND = {
    "wallet": (wallet_not_found(CHAIN, WALLET), "a wallet that does not exist on the chain"),
    "token": (
        NotFound(f"Token 0x{'00' * 20} is not supported on chain {CHAIN}"),
        "a token the chain does not support",
    ),
    "chain_id": (
        NotFound(
            "Chain 10 is not supported; supported chains: 1, 137, 8453, 42161, 84532, 11155111"
        ),
        "a chain the service does not run on",
    ),
}
"""What a path value names, most specific first: the error for one that names nothing."""


def _body(error: YieldAgentError | None, policy: MethodPolicy) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(errors.rest_body(error, policy))
    return body


def _answer(name: str, error: YieldAgentError | None, why: str, policy: MethodPolicy) -> Answer:
    """The answer to ``error`` as the service renders it for this method."""
    return Answer(
        name,
        errors.status_of(error)[1],
        why,
        _body(error, policy),
        errors.retry_after(error) is not None,
    )


def _edge_type_error(method: MethodDescriptor, policy: MethodPolicy) -> YieldAgentError | None:
    """The edge's refusal of a badly typed value: malformed JSON where a body is taken,
    else a path or query value it cannot read (an integer first)."""
    if policy.body_field is not None:  # a bare JSON array
        return InvalidInput.field((), *_EDGE_JSON_ARRAY)
    if "body" in policy.field_sources.values():
        return InvalidInput.field((), *_EDGE_JSON)
    ranked = list(_EDGE_TEXT)
    checked = [
        (ranked.index(member.type), name)
        for name, source in policy.field_sources.items()
        if source in ("path", "query")
        and (member := method.input_type.fields_by_name[name]).type in _EDGE_TEXT
        and not member.is_repeated
    ]
    if not checked:
        return None
    _, name = min(checked)
    kind = method.input_type.fields_by_name[name].type
    if kind == FieldDescriptor.TYPE_STRING:
        return InvalidInput.field((name,), *_EDGE_UNICODE)
    type_name = descriptor_pb2.FieldDescriptorProto.Type.Name(kind)  # type: ignore[arg-type]
    message = f'invalid value "{_EDGE_TEXT[kind]}" for type {type_name}'
    return InvalidInput.field((name,), message, "type_error")


def answers(
    method: MethodDescriptor, policy: MethodPolicy, template: str, body: str
) -> list[Answer]:
    """Every reason the operation of ``method`` (http rule ``template``, ``body``) refuses."""
    found: list[Answer] = []
    typed = _edge_type_error(method, policy)
    if typed is not None:
        found.append(
            _answer(
                "wrong_type",
                typed,
                "A value has the wrong JSON type, or the body is not JSON.",
                policy,
            )
        )
    if body:
        found.append(
            Answer(
                "too_large",
                413,
                f"The body is larger than {BODY_LIMIT}.",
                {"detail": "Payload Too Large"},
            )
        )
    path_fields = re.findall(r"{([^}=]+)", template)
    named = [field for field in _PATH_NOT_FOUND if field in path_fields]
    if named:
        error = _PATH_NOT_FOUND[named[0]][0]
        why = ", or ".join(_PATH_NOT_FOUND[field][1] for field in named)
        found.append(_answer("not_found", error, f"The path names {why}.", policy))
    if policy.permission is not None:
        found += [
            _answer(
                "unauthenticated",
                AuthenticationFailed(INVALID_KEY),
                "The partner headers are missing, or the name and key do not match.",
                policy,
            ),
            _answer(
                "no_permission",
                AccessDenied(f"Access denied: the partner may not use {policy.permission}"),
                f"The key is inactive, or the partner lacks the permission `{policy.permission}`.",
                policy,
            ),
            _answer(
                "rate_limited",
                _rate_limited(),
                "The partner called faster than its rate limit: retry after `Retry-After` seconds.",
                policy,
            ),
        ]
    if policy.money_call:
        found.append(
            _answer(
                "money_calls_limited",
                _money_calls_limited(),
                "The partner made `YIELDAGENT_WALLET_MONEY_CALLS_PER_MINUTE` money calls on "
                "this wallet within a minute: retry after `Retry-After` seconds.",
                policy,
            )
        )
    if policy.idempotent:
        found += [
            _answer(
                "key_in_use",
                Conflict(
                    "A request with this Idempotency-Key is still in progress; retry later",
                    retry_after_seconds=20,
                ),
                "A call with the same Idempotency-Key is still running: retry after "
                "`Retry-After` seconds.",
                policy,
            ),
            _answer(
                "key_reused",
                reused(),
                "The Idempotency-Key is not 1 to 255 printable ASCII characters, or was "
                "used with another request.",
                policy,
            ),
        ]
    found += [_answer(*refusal, policy) for refusal in declared(method.name)]
    return found


def declared(name: str) -> Sequence[Refusal]:
    """The refusals declared for the method ``name``; every routed method has an entry."""
    if name not in REFUSALS:
        raise ValueError(f"{name}: its use case's errors are not declared in REFUSALS")
    return REFUSALS[name]
