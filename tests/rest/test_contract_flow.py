"""Every documented status, provoked on purpose; each answer checked against the OpenAPI
document by schemathesis.

Generated requests rarely get past the service's checks, so this module makes real
calls. The partner flow calls every operation at least once and gets the successes (201,
204, a replayed answer); then each operation is refused once for each error status it
documents: without a key, by a partner without the permission, on a wallet that is
another partner's, missing or deactivated, with malformed values or a body above the
limit. Every answer must conform (status, content type, headers and body) and be no 5xx.

The statuses each operation answered are recorded; the last test compares them with
what the document lists. A documented status that no call here provoked is named in
the test summary (a warning) with the reason it cannot be provoked on this rig
(``NOT_PROVOKED``: no rate limit here, a simulated chain that always answers, ...). The
test fails when a documented status is neither provoked nor reviewed there, so that a
new status, or a refusal that stops being provoked, is looked at.
"""

from __future__ import annotations

import itertools
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
import schemathesis
from eth_utils.address import to_checksum_address
from schemathesis import APIOperation

from support.contract import CONFORMANCE, UnprovokedStatuses, record
from support.funded import PROTOCOLS, USDC, Funded
from support.service import RunningService
from yieldagent.chain.simulated.market import SimulatedMarket

CHAIN = 8453
UNKNOWN_CHAIN = 10
MONTH = 30 * 24 * 3600
_eoas = itertools.count(0xC0_0000)

ACCOUNTS = "/api/v1/proxy/zerodev/smart-accounts"
SAFES = "/api/v1/proxy/safe/smart-accounts"
ACTIVATE = "POST /api/v1/{chain_id}/wallets"
WALLET = "/api/v1/{chain_id}/wallets/{wallet}"
REWARDS = "/api/v1/{chain_id}/rewards/{wallet}"
OPTIMIZE = "POST /api/v1/optimizer/{chain_id}/optimize"
SUPPLY = "GET /api/v1/{chain_id}/{token}/protocols/supply"
POOL_HISTORY = "GET /api/v1/{chain_id}/protocols/{protocol}/history"
NUMBERS_AND_DETAILS: dict[str, Any] = {
    f"GET {WALLET}/performance": lambda eoa: {},
    f"GET {WALLET}/apr/tokens": lambda eoa: {"token_price": 1.0},
    f"GET {WALLET}/earnings": lambda eoa: {},
    f"GET {WALLET}/deposits": lambda eoa: {},
    f"GET {WALLET}/fee": lambda eoa: {},
    f"GET {WALLET}/limit": lambda eoa: {"eoa": eoa},
    f"GET {WALLET}/protocols": lambda eoa: {},
    f"GET {WALLET}/constraints": lambda eoa: {},
    f"GET {WALLET}/whitelist": lambda eoa: {},
    f"GET {WALLET}/executions": lambda eoa: {"page": 1, "limit": 5, "sort": "date_asc"},
    f"GET {WALLET}/logs": lambda eoa: {"page": 1, "limit": 5},
}
"""The wallet's reads beyond the contract's, by label, each with its query for the
wallet's EOA."""
EXECUTION_LOGS = f"GET {WALLET}/executions/{{execution_id}}/logs"
CONSTRAINTS = f"PUT {WALLET}/constraints"
RULES = {"constraints": [{"kind": "min_protocols", "params": {"min_protocols": 1}}]}
TOO_LARGE = "1" * (1024 * 1024 + 1)
"""A value that takes a JSON body above Envoy's 1 MiB buffer."""

NOT_PROVOKED_ANYWHERE = {
    429: "this service runs without a rate limit (tests/rest/test_operating.py sets one)",
    500: "an unexpected failure, which no request may cause",
    501: "a Kernel account on a real chain only (tests/rest/test_devnet_flow.py)",
    503: "the simulated chain always answers (tests/servicers/test_errors_mapping.py maps "
    "a chain's failure to 503)",
}
"""Statuses this rig cannot provoke on any operation, and why."""
NOT_PROVOKED = {
    (f"POST {ACCOUNTS}", 409): "only while a call with the same Idempotency-Key runs "
    "(tests/rest/test_idempotency.py)",
    (f"POST {SAFES}", 409): "only while a call with the same Idempotency-Key runs",
    (f"POST {SAFES}", 503): "only on a real chain without a fee collector apart from the "
    "operator (tests/composition/test_chains.py)",
    (f"POST {REWARDS}", 409): "only while the wallet is deactivating or another call holds "
    "it, which the simulated chain never makes last",
}
"""Statuses of one operation this rig cannot provoke, and why."""


@dataclass
class Provoked:
    """What this module's calls answered, per operation, and which tests made them."""

    statuses: dict[str, set[int]] = field(default_factory=dict)
    tests: set[str] = field(default_factory=set)


@pytest.fixture(scope="module")
def document(api: RunningService) -> Any:
    return schemathesis.openapi.from_url(f"http://127.0.0.1:{api.http_port}/api/v1/openapi.json")


@pytest.fixture(scope="module")
def provoked(api: RunningService) -> Provoked:
    """The answers of this module's tests against one service (one per backend)."""
    return Provoked()


class Flow:
    """Calls operations by label and checks each answer against the document."""

    def __init__(
        self, document: Any, headers: dict[str, str], provoked: Provoked, prefix: str = "flow"
    ) -> None:
        self._document = document
        self._headers = headers
        self._provoked = provoked
        self._prefix = prefix
        self.called: set[str] = set()
        self.answered: dict[str, Counter[int]] = {}

    def call(self, label: str, status: int | tuple[int, ...], **parts: Any) -> Any:
        """Calls one operation with ``parts`` (path_parameters, query, body, headers)."""
        operation: APIOperation[Any, Any, Any, Any] | None = self._document.find_operation_by_label(
            label
        )
        assert operation is not None, label
        headers = {**self._headers, **parts.pop("headers", {})}
        case = operation.Case(headers=headers, **parts)
        response = case.call_and_validate(checks=CONFORMANCE)
        expected = status if isinstance(status, tuple) else (status,)
        assert response.status_code in expected, (label, response.status_code, response.text)
        self.called.add(label)
        self.answered.setdefault(f"{self._prefix} {label}", Counter())[response.status_code] += 1
        self._provoked.statuses.setdefault(label, set()).add(response.status_code)
        return response

    def as_partner(self, headers: dict[str, str]) -> Flow:
        """The same calls with other credentials, recorded here."""
        other = Flow(self._document, headers, self._provoked, self._prefix)
        other.called, other.answered = self.called, self.answered
        return other


def test_every_operation_answers_as_documented_in_the_partner_flow(
    document: Any,
    make_partner: Any,
    world: SimulatedMarket,
    provoked: Provoked,
    record_property: Any,
) -> None:
    flow = Flow(document, make_partner(), provoked)
    eoa = to_checksum_address(f"0x{next(_eoas):040x}")
    wallet_path = {"chain_id": CHAIN, "wallet": ""}

    flow.call("GET /api/v1/healthcheck", 200)
    flow.call("GET /api/v1/chains", 200)
    flow.call("GET /api/v1/config", 200)
    flow.call("GET /api/v1/{chain_id}/tokens", 200, path_parameters={"chain_id": CHAIN})
    flow.call(
        "GET /api/v1/{chain_id}/{token}/protocols",
        200,
        path_parameters={"chain_id": CHAIN, "token": USDC},
    )

    # A smart account; the same key again replays the first answer.
    account = {"eoa": eoa, "chain": CHAIN}
    key = {"Idempotency-Key": f"contract-{eoa}"}
    created = flow.call(f"POST {ACCOUNTS}", 200, body=account, headers=key)
    replayed = flow.call(f"POST {ACCOUNTS}", 200, body=account, headers=key)
    assert replayed.headers.get("idempotent-replayed") == ["true"]
    assert replayed.json() == created.json()
    flow.call(f"GET {ACCOUNTS}", 200, query=account)
    wallet = created.json()["smartAccount"]
    safe = flow.call(f"POST {SAFES}", 200, body=account, headers={"Idempotency-Key": f"s-{eoa}"})
    assert flow.call(f"GET {SAFES}", 200, query=account).json() == safe.json()
    wallet_path["wallet"] = wallet

    # Activation (201) of a funded account on Moonwell alone, whose pool pays WELL
    # rewards, then a month on the simulated chain.
    deposit = world.deposit_from(CHAIN, USDC, eoa, wallet, 2_000 * 10**6)
    activation = {
        "wallet": wallet,
        "eoa": eoa,
        "initial_token": USDC,
        "selected_protocols": ["moonwell"],
        "tx_hash": deposit.tx_hash,
    }
    flow.call(ACTIVATE, 201, path_parameters={"chain_id": CHAIN}, body=activation)
    world.advance(MONTH)

    reads = (
        f"GET {WALLET}",
        f"GET {WALLET}/transactions",
        f"GET {WALLET}/apr",
        f"GET {REWARDS}",
        f"GET {REWARDS}/history",
    )
    for label in reads:
        flow.call(label, 200, path_parameters=wallet_path)
    for label, query in NUMBERS_AND_DETAILS.items():
        flow.call(label, 200, path_parameters=wallet_path, query=query(eoa))
    executions = flow.call(f"GET {WALLET}/executions", 200, path_parameters=wallet_path)
    first = executions.json()["executions"][0]["id"]
    flow.call(EXECUTION_LOGS, 200, path_parameters={**wallet_path, "execution_id": first})
    on_chain = {"chain_id": CHAIN, "token": USDC}
    flow.call(SUPPLY, 200, path_parameters=on_chain)
    flow.call(POOL_HISTORY, 200, path_parameters={"chain_id": CHAIN, "protocol": "moonwell"})
    flow.call("GET /api/v1/{chain_id}/stats", 200, path_parameters={"chain_id": CHAIN})
    flow.call(f"POST {WALLET}:claim-rewards", 200, path_parameters=wallet_path)

    # Money moves, settings (204) and a top-up (201).
    flow.call(
        f"POST {WALLET}:withdraw", 200, path_parameters=wallet_path, body={"amount": 100 * 10**6}
    )
    flow.call(f"PUT {WALLET}/protocols", 204, path_parameters=wallet_path, body=PROTOCOLS)
    flow.call(CONSTRAINTS, 204, path_parameters=wallet_path, body=RULES)
    flow.call(f"POST {REWARDS}", 204, path_parameters=wallet_path, body={"is_staked": True})
    top_up = world.deposit_from(CHAIN, USDC, eoa, wallet, 300 * 10**6)
    flow.call(
        f"POST {WALLET}:top-up",
        201,
        path_parameters=wallet_path,
        query={"tx_hash": top_up.tx_hash},
    )
    flow.call(f"POST {WALLET}:run", 200, path_parameters=wallet_path)
    flow.call(
        OPTIMIZE,
        200,
        path_parameters={"chain_id": CHAIN},
        body={
            "total_capital": 1_000 * 10**6,
            "token_address": USDC,
            "protocols": PROTOCOLS,
        },
    )

    # Deactivation; a second one conflicts (409).
    flow.call(f"POST {WALLET}:deactivate", 200, path_parameters=wallet_path)
    flow.call(f"POST {WALLET}:deactivate", 409, path_parameters=wallet_path)
    flow.call(f"GET {WALLET}", 200, path_parameters=wallet_path)

    every = {
        f"{verb.upper()} {path}"
        for path, verbs in document.raw_schema["paths"].items()
        for verb in verbs
    }
    assert flow.called == every
    provoked.tests.add("flow")
    record(record_property, flow.answered)


def test_every_documented_refusal_answers_as_documented(
    api: RunningService,
    document: Any,
    make_partner: Any,
    fund: Any,
    world: SimulatedMarket,
    provoked: Provoked,
    record_property: Any,
) -> None:
    active: Funded = fund()
    stopped: Funded = fund()
    for funded in (active, stopped):
        answer = api.request("POST", "/api/v1/8453/wallets", funded.activation(), funded.headers)
        assert answer.status == 201, answer.body
    path = f"/api/v1/8453/wallets/{stopped.wallet}:deactivate"
    assert api.request("POST", path, headers=stopped.headers).status == 200

    mine = Flow(document, active.headers, provoked, prefix="refused")
    nobody = mine.as_partner({})
    unpermitted = mine.as_partner(make_partner(frozenset()))
    other = mine.as_partner(make_partner())
    unknown = to_checksum_address(f"0x{next(_eoas):040x}")
    on = {"chain_id": CHAIN, "wallet": active.wallet}
    off = {"chain_id": CHAIN, "wallet": stopped.wallet}
    missing = {"chain_id": CHAIN, "wallet": unknown}
    malformed = {"chain_id": CHAIN, "wallet": "0x12"}
    mistyped = {"chain_id": "abc", "wallet": active.wallet}
    elsewhere = {"chain_id": UNKNOWN_CHAIN}

    # The catalog, the statistics and the wallet poll: public, by path only.
    mine.call("GET /api/v1/{chain_id}/tokens", 404, path_parameters=elsewhere)
    mine.call("GET /api/v1/{chain_id}/tokens", 422, path_parameters={"chain_id": "abc"})
    protocols = "GET /api/v1/{chain_id}/{token}/protocols"
    mine.call(protocols, 404, path_parameters={"chain_id": CHAIN, "token": "0x" + "00" * 20})
    mine.call(protocols, 422, path_parameters={"chain_id": CHAIN, "token": "USDC"})
    mine.call("GET /api/v1/{chain_id}/stats", 404, path_parameters=elsewhere)
    mine.call("GET /api/v1/{chain_id}/stats", 422, path_parameters={"chain_id": "abc"})
    mine.call(f"GET {WALLET}", 404, path_parameters=missing)
    mine.call(f"GET {WALLET}", 422, path_parameters=malformed)

    # Every keyed operation: no key (401), a partner without the permission (403).
    keyed: list[tuple[str, dict[str, Any]]] = [
        (f"POST {ACCOUNTS}", {"body": {"eoa": active.eoa, "chain": CHAIN}}),
        (f"GET {ACCOUNTS}", {"query": {"eoa": active.eoa, "chain": CHAIN}}),
        (f"POST {SAFES}", {"body": {"eoa": active.eoa, "chain": CHAIN}}),
        (f"GET {SAFES}", {"query": {"eoa": active.eoa, "chain": CHAIN}}),
        (ACTIVATE, {"path_parameters": {"chain_id": CHAIN}, "body": active.activation()}),
        (f"POST {WALLET}:deactivate", {"path_parameters": on}),
        (f"POST {WALLET}:withdraw", {"path_parameters": on, "body": {"amount": 1}}),
        (f"POST {WALLET}:run", {"path_parameters": on}),
        (
            f"POST {WALLET}:top-up",
            {"path_parameters": on, "query": {"tx_hash": active.tx_hash}},
        ),
        (f"PUT {WALLET}/protocols", {"path_parameters": on, "body": PROTOCOLS}),
        (CONSTRAINTS, {"path_parameters": on, "body": RULES}),
        (f"GET {WALLET}/transactions", {"path_parameters": on}),
        (f"GET {WALLET}/apr", {"path_parameters": on}),
        (f"POST {WALLET}:claim-rewards", {"path_parameters": on}),
        (f"GET {REWARDS}", {"path_parameters": on}),
        (f"POST {REWARDS}", {"path_parameters": on, "body": {"is_staked": True}}),
        (f"GET {REWARDS}/history", {"path_parameters": on}),
        *(
            (label, {"path_parameters": on, "query": query(active.eoa)})
            for label, query in NUMBERS_AND_DETAILS.items()
        ),
        (OPTIMIZE, {"path_parameters": {"chain_id": CHAIN}, "body": {"total_capital": 1}}),
    ]
    for label, parts in keyed:
        nobody.call(label, 401, **parts)
        unpermitted.call(label, 403, **parts)

    # Smart accounts.
    account = {"eoa": active.eoa, "chain": CHAIN}
    other.call(f"POST {ACCOUNTS}", 403, body=account)  # another partner's EOA and agent id
    mine.call(f"POST {ACCOUNTS}", 413, body={**account, "agent_id": TOO_LARGE})
    mine.call(f"POST {ACCOUNTS}", 422, body={"eoa": "0x12", "chain": CHAIN})
    mine.call(f"GET {ACCOUNTS}", 404, query={"eoa": unknown, "chain": CHAIN})
    mine.call(f"GET {ACCOUNTS}", 422, query={"eoa": "0x12", "chain": CHAIN})
    mine.call(f"POST {SAFES}", 200, body=account)
    other.call(f"POST {SAFES}", 403, body=account)
    other.call(f"GET {SAFES}", 403, query=account)
    mine.call(f"POST {SAFES}", 413, body={**account, "agent_id": TOO_LARGE})
    mine.call(f"POST {SAFES}", 422, body={"eoa": "0x12", "chain": CHAIN})
    mine.call(f"GET {SAFES}", 404, query={"eoa": unknown, "chain": CHAIN})
    mine.call(f"GET {SAFES}", 422, query={"eoa": "0x12", "chain": CHAIN})

    # Activation.
    here = {"chain_id": CHAIN}
    stranger = active.activation(wallet=unknown)
    mine.call(ACTIVATE, 400, path_parameters=here, body=stranger)  # not the EOA's account
    mine.call(ACTIVATE, 404, path_parameters=elsewhere, body=active.activation())
    mine.call(ACTIVATE, 409, path_parameters=here, body=active.activation())  # active already
    mine.call(ACTIVATE, 413, path_parameters=here, body=active.activation(tx_hash=TOO_LARGE))
    mine.call(ACTIVATE, 422, path_parameters=here, body=active.activation(wallet="0x12"))
    other.call(ACTIVATE, 403, path_parameters=here, body=active.activation())

    # What a wallet's owner does: on a missing wallet (404), a malformed address or path
    # value (422), another partner's wallet (403), a deactivated wallet (409).
    by_wallet: list[tuple[str, dict[str, Any]]] = [
        (f"POST {WALLET}:deactivate", {}),
        (f"POST {WALLET}:withdraw", {"body": {"amount": 1}}),
        (f"POST {WALLET}:run", {}),
        (f"POST {WALLET}:top-up", {"query": {"tx_hash": stopped.tx_hash}}),
        (f"PUT {WALLET}/protocols", {"body": PROTOCOLS}),
        (CONSTRAINTS, {"body": RULES}),
        (f"GET {WALLET}/transactions", {}),
        (f"GET {WALLET}/apr", {}),
        (f"POST {WALLET}:claim-rewards", {}),
        (f"GET {REWARDS}", {}),
        (f"POST {REWARDS}", {"body": {"is_staked": True}}),
        (f"GET {REWARDS}/history", {}),
        *((label, {"query": query(active.eoa)}) for label, query in NUMBERS_AND_DETAILS.items()),
    ]
    changes = {label for label, _ in by_wallet if not label.startswith("GET")}
    for label, parts in by_wallet:
        mine.call(label, 404, path_parameters=missing, **parts)
        mine.call(label, 422, path_parameters=malformed, **parts)
        mine.call(label, 422, path_parameters=mistyped, **parts)
        other.call(label, 403, path_parameters=on, **parts)
        if label in changes and label != f"POST {REWARDS}":
            mine.call(label, 409, path_parameters=off, **parts)

    # What only some of them refuse.
    mine.call(f"POST {WALLET}:withdraw", 400, path_parameters=on, body={"amount": 10**15})
    mine.call(f"POST {WALLET}:withdraw", 413, path_parameters=on, body={"amount": TOO_LARGE})
    mine.call(f"POST {WALLET}:withdraw", 422, path_parameters=on, body={"amount": 0})
    unsent = "0x" + "ab" * 32
    mine.call(f"POST {WALLET}:top-up", 400, path_parameters=on, query={"tx_hash": unsent})
    mine.call(f"POST {WALLET}:top-up", 422, path_parameters=on, query={"tx_hash": "0x12"})
    mine.call(f"PUT {WALLET}/protocols", 400, path_parameters=on, body=["nowhere"])
    mine.call(f"PUT {WALLET}/protocols", 413, path_parameters=on, body=[TOO_LARGE])
    mine.call(f"PUT {WALLET}/protocols", 422, path_parameters=on, body=[])
    mine.call(f"GET {WALLET}/transactions", 422, path_parameters=on, query={"page": 0})
    mine.call(f"GET {WALLET}/apr", 422, path_parameters=on, query={"start_date": "yesterday"})
    mine.call(f"POST {WALLET}:claim-rewards", 400, path_parameters=on)  # nothing accrued
    mine.call(f"GET {REWARDS}/history", 422, path_parameters=on, query={"limit": 500})
    mine.call(f"GET {REWARDS}", 422, path_parameters=on, query={"sort": "newest"})
    mine.call(f"POST {REWARDS}", 413, path_parameters=on, body={"is_staked": TOO_LARGE})
    mine.call(f"POST {REWARDS}", 422, path_parameters=on, body={})
    [placement] = api.request(
        "GET", f"/api/v1/8453/wallets/{active.wallet}/executions", headers=active.headers
    ).json()["executions"]
    logs = {**on, "execution_id": placement["id"]}
    nobody.call(EXECUTION_LOGS, 401, path_parameters=logs)
    unpermitted.call(EXECUTION_LOGS, 403, path_parameters=logs)
    other.call(EXECUTION_LOGS, 403, path_parameters=logs)
    mine.call(EXECUTION_LOGS, 404, path_parameters={**logs, "execution_id": "nowhere"})
    mine.call(EXECUTION_LOGS, 404, path_parameters={**missing, "execution_id": placement["id"]})
    mine.call(EXECUTION_LOGS, 422, path_parameters={**malformed, "execution_id": placement["id"]})
    mine.call(EXECUTION_LOGS, 422, path_parameters={**logs, "chain_id": "abc"})
    mine.call(EXECUTION_LOGS, 422, path_parameters=logs, query={"page": 0})
    mine.call(EXECUTION_LOGS, 200, path_parameters=logs)
    impossible = {"constraints": [{"kind": "min_protocols", "params": {"min_protocols": 9}}]}
    mine.call(CONSTRAINTS, 400, path_parameters=on, body=impossible)
    huge = {"constraints": [{"kind": TOO_LARGE, "params": {}}]}
    mine.call(CONSTRAINTS, 413, path_parameters=on, body=huge)
    zero = {"constraints": [{"kind": "min_protocols", "params": {"min_protocols": 0}}]}
    mine.call(CONSTRAINTS, 422, path_parameters=on, body=zero)
    limit = f"GET {WALLET}/limit"
    mine.call(limit, 400, path_parameters=on, query={"eoa": stopped.eoa})  # not the owner
    mine.call(limit, 422, path_parameters=on, query={"eoa": "0x12"})
    mine.call(f"GET {WALLET}/earnings", 422, path_parameters=on, query={"interval": "week"})

    # The pools: public, by path only.
    pool = {"chain_id": CHAIN, "token": USDC}
    mine.call(SUPPLY, 404, path_parameters={**pool, "token": "0x" + "00" * 20})
    mine.call(SUPPLY, 422, path_parameters={**pool, "token": "USDC"})
    moonwell = {"chain_id": CHAIN, "protocol": "moonwell"}
    mine.call(POOL_HISTORY, 404, path_parameters={**moonwell, "protocol": "nowhere"})
    mine.call(POOL_HISTORY, 422, path_parameters=moonwell, query={"interval": "week"})

    # The optimizer.
    plan = {"total_capital": 10**9, "token_address": USDC, "protocols": PROTOCOLS}
    mine.call(OPTIMIZE, 400, path_parameters=here, body={**plan, "protocols": ["nowhere"]})
    mine.call(OPTIMIZE, 404, path_parameters=elsewhere, body=plan)
    mine.call(OPTIMIZE, 413, path_parameters=here, body={**plan, "total_capital": TOO_LARGE})
    mine.call(OPTIMIZE, 422, path_parameters=here, body={**plan, "total_capital": "1e9"})

    provoked.tests.add("refusals")
    record(record_property, mine.answered)


def _reason(label: str, status: int) -> str | None:
    """Why this rig cannot provoke ``status`` on the operation ``label``, if reviewed."""
    return NOT_PROVOKED.get((label, status)) or NOT_PROVOKED_ANYWHERE.get(status)


def test_documented_statuses_are_provoked_or_reviewed(
    document: Any, provoked: Provoked, record_property: Any
) -> None:
    if provoked.tests != {"flow", "refusals"}:
        pytest.skip("needs both calling tests of this module, run first on this service")
    documented = {
        f"{verb.upper()} {path}": {int(status) for status in operation["responses"]}
        for path, verbs in document.raw_schema["paths"].items()
        for verb, operation in verbs.items()
    }
    unprovoked = {
        label: sorted(statuses - provoked.statuses.get(label, set()))
        for label, statuses in sorted(documented.items())
    }
    unprovoked = {label: statuses for label, statuses in unprovoked.items() if statuses}
    record_property("documented_not_provoked", unprovoked)
    reviewed = {
        (label, status): _reason(label, status)
        for label, statuses in unprovoked.items()
        for status in statuses
    }
    if unprovoked:
        lines = [f"  {label}: {', '.join(map(str, s))}" for label, s in unprovoked.items()]
        reasons = sorted(
            {
                f"  {status} ({label if (label, status) in NOT_PROVOKED else 'any operation'}): "
                f"{why}"
                for (label, status), why in reviewed.items()
                if why
            }
        )
        warnings.warn(
            UnprovokedStatuses(
                "documented but not provoked by the contract flow:\n"
                + "\n".join(lines)
                + "\nwhy (tests/rest/test_contract_flow.py NOT_PROVOKED):\n"
                + "\n".join(reasons)
            ),
            stacklevel=1,
        )
    stale = sorted(
        (label, status)
        for label, status in NOT_PROVOKED
        if status not in documented.get(label, set())
        or status in provoked.statuses.get(label, set())
    )
    unexpected = sorted(key for key, why in reviewed.items() if why is None)
    assert not unexpected, f"documented, not provoked and not reviewed: {unexpected}"
    assert not stale, f"reviewed as not provoked, but provoked or not documented: {stale}"
