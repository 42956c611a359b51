"""The optimizer endpoint and manual agent runs over REST through Envoy."""

from __future__ import annotations

from typing import Any

import pytest

from support.funded import PROTOCOLS, USDC, Funded
from support.service import Response, RunningService

OPTIMIZE = "/api/v1/optimizer/8453/optimize"
WALLETS = "/api/v1/8453/wallets"
UNKNOWN = "0x" + "9b" * 20
UNIT = 10**6
TOTAL = 1_000 * UNIT


def _request(**overrides: Any) -> dict[str, Any]:
    """An optimize request for 1,000 USDC, 600 of which sit in aave."""
    return {
        "total_capital": str(TOTAL),
        "token_address": USDC,
        "current_allocations": {"aave": str(600 * UNIT)},
        "protocols": ["aave", "compound", "moonwell"],
        **overrides,
    }


def _allocations(body: dict[str, Any]) -> dict[str, int]:
    return {a["protocol"]: int(a["allocation"]) for a in body["optimization_result"]["allocations"]}


def _assert_plan_reaches_the_allocations(body: dict[str, Any], current: dict[str, int]) -> None:
    """Withdrawals first, and current - withdrawals + deposits == allocations per protocol."""
    plan = body["action_plan"]
    kinds = [action["action_type"] for action in plan]
    assert set(kinds) <= {"withdraw", "deposit"}
    assert kinds == sorted(kinds, key=lambda kind: kind != "withdraw"), "withdrawals first"
    reached = dict(current)
    for action in plan:
        amount = int(action["amount"])
        assert amount > 0
        sign = -1 if action["action_type"] == "withdraw" else 1
        reached[action["protocol"]] = reached.get(action["protocol"], 0) + sign * amount
    assert {n: a for n, a in reached.items() if a} == _allocations(body)


# -- optimize ------------------------------------------------------------------------------------


def test_optimize_answers_the_reference_shape(api: RunningService, keyed: dict[str, str]) -> None:
    request = _request(wallet_address="0x" + "12" * 20)
    response = api.request("POST", OPTIMIZE, request, keyed)
    assert response.status == 200, response.body
    body = response.json()
    assert set(body) == {"optimization_result", "action_plan", "calldata"}
    assert body["calldata"] == []  # nothing to sign on the simulated market
    result = body["optimization_result"]
    assert set(result) == {
        "allocations",
        "total_costs",
        "weighted_apr_initial",
        "weighted_apr_final",
        "apr_improvement",
        "gas_estimate_usd",
        "break_even_days",
    }
    for allocation in result["allocations"]:
        assert set(allocation) == {"protocol", "allocation", "apr"}
        assert isinstance(allocation["allocation"], str) and allocation["allocation"].isdigit()
        assert isinstance(allocation["apr"], float) and 0 < allocation["apr"] < 100
        assert allocation["protocol"] in request["protocols"]
    assert sum(_allocations(body).values()) == TOTAL
    for name in ("total_costs", "weighted_apr_initial", "weighted_apr_final", "apr_improvement"):
        assert isinstance(result[name], int | float), name
    assert result["total_costs"] == result["gas_estimate_usd"] >= 0
    assert result["apr_improvement"] == pytest.approx(
        result["weighted_apr_final"] - result["weighted_apr_initial"]
    )
    # 400 of the 1,000 USDC are idle: moving pays, and the plan says how
    assert result["weighted_apr_final"] > result["weighted_apr_initial"] > 0
    # Whether moving aave's 600 pays too depends on the pools' rates, which the other
    # tests on this service move: a plan that moves it says when that pays back; a plan
    # that only places the idle funds has nothing to pay back (null).
    break_even = result["break_even_days"]
    assert break_even is None or (isinstance(break_even, float) and break_even >= 0)
    if any(action["action_type"] == "withdraw" for action in body["action_plan"]):
        assert break_even is not None
    for action in body["action_plan"]:
        assert set(action) == {"action_type", "protocol", "amount", "underlying_amount"}
        assert isinstance(action["amount"], str)
        assert action["underlying_amount"] in (None, action["amount"])
    assert body["action_plan"], "a plan that moves nothing although 400 USDC are idle"
    _assert_plan_reaches_the_allocations(body, {"aave": 600 * UNIT})


def test_optimize_is_stateless(api: RunningService, keyed: dict[str, str]) -> None:
    first = api.request("POST", OPTIMIZE, _request(), keyed)
    second = api.request("POST", OPTIMIZE, _request(), keyed)
    assert first.status == second.status == 200
    assert first.json() == second.json()


def test_a_position_outside_the_protocols_is_withdrawn(
    api: RunningService, keyed: dict[str, str]
) -> None:
    current = {"moonwell": 700 * UNIT, "aave": 300 * UNIT}
    body = _request(
        current_allocations={n: str(a) for n, a in current.items()},
        protocols=["aave", "compound"],
    )
    response = api.request("POST", OPTIMIZE, body, keyed)
    assert response.status == 200, response.body
    answer = response.json()
    withdrawals = {
        a["protocol"]: a["amount"] for a in answer["action_plan"] if a["action_type"] == "withdraw"
    }
    assert withdrawals["moonwell"] == str(700 * UNIT)  # whatever it costs: no longer allowed
    assert "moonwell" not in _allocations(answer)
    assert sum(_allocations(answer).values()) == TOTAL
    _assert_plan_reaches_the_allocations(answer, current)


def test_optimize_honours_constraints(api: RunningService, keyed: dict[str, str]) -> None:
    constraints = [
        {
            "kind": "max_allocation_amount_per_protocol",
            "params": {"protocol": "compound", "max_amount": 300 * UNIT},
        },
        {"kind": "exclude_protocol", "params": {"protocol": "moonwell"}},
        {"kind": "min_protocols", "params": {"min_protocols": 2, "min_fraction_per_protocol": 0.1}},
    ]
    body = _request(current_allocations={}, constraints=constraints)
    response = api.request("POST", OPTIMIZE, body, keyed)
    assert response.status == 200, response.body
    allocations = _allocations(response.json())
    assert "moonwell" not in allocations
    assert allocations["compound"] <= 300 * UNIT
    assert len(allocations) >= 2 and min(allocations.values()) >= 100 * UNIT
    assert sum(allocations.values()) == TOTAL
    _assert_plan_reaches_the_allocations(response.json(), {})


def test_infeasible_constraints_are_400(api: RunningService, keyed: dict[str, str]) -> None:
    constraints = [{"kind": "min_protocols", "params": {"min_protocols": 4}}]
    response = api.request("POST", OPTIMIZE, _request(constraints=constraints), keyed)
    assert response.status == 400
    assert "Constraints cannot be met" in response.json()["detail"]


def test_optimize_needs_a_key(api: RunningService) -> None:
    response = api.request("POST", OPTIMIZE, _request())
    assert response.status == 401
    assert response.error() == {"detail": "Invalid or missing API key"}


@pytest.mark.parametrize(
    ("overrides", "loc"),
    [
        ({"total_capital": "a lot"}, ["body", "total_capital"]),
        ({"total_capital": "-5"}, ["body", "total_capital"]),
        ({"total_capital": str(500 * UNIT)}, ["body", "total_capital"]),  # below the 600 held
        ({"current_allocations": {"aave": "six"}}, ["body", "current_allocations", "aave"]),
    ],
    ids=["non-numeric", "negative", "below-current-allocations", "non-numeric-current"],
)
def test_optimize_input_errors_are_422(
    api: RunningService, keyed: dict[str, str], overrides: dict[str, Any], loc: list[str]
) -> None:
    response = api.request("POST", OPTIMIZE, _request(**overrides), keyed)
    assert response.status == 422, response.body
    assert response.json()["detail"][0]["loc"] == loc


def test_an_unknown_protocol_is_400(api: RunningService, keyed: dict[str, str]) -> None:
    response = api.request("POST", OPTIMIZE, _request(protocols=["aave", "nope"]), keyed)
    assert response.status == 400
    assert "nope" in response.json()["detail"]
    held = api.request("POST", OPTIMIZE, _request(current_allocations={"ghost": "1"}), keyed)
    assert held.status == 400
    assert "ghost" in held.json()["detail"]


def test_an_unknown_chain_is_404(api: RunningService, keyed: dict[str, str]) -> None:
    response = api.request("POST", "/api/v1/optimizer/5/optimize", _request(), keyed)
    assert response.status == 404
    assert "Chain 5" in response.json()["detail"]


# -- manual runs ---------------------------------------------------------------------------------


def _run(api: RunningService, funded: Funded, headers: dict[str, str] | None = None) -> Response:
    url = f"{WALLETS}/{funded.wallet}:run"
    return api.request("POST", url, headers=headers if headers is not None else funded.headers)


def test_running_an_activated_wallet(api: RunningService, activated: Funded) -> None:
    response = _run(api, activated)
    assert response.status == 200, response.body
    body = response.json()
    assert set(body) == {"status"}
    assert body["status"] in {"completed", "no_action", "failed"}
    wallet = api.request("GET", f"{WALLETS}/{activated.wallet}").json()
    assert wallet["status"] == "activated"  # back from running


def test_running_a_deactivated_wallet_is_409(api: RunningService, activated: Funded) -> None:
    stop = api.request(
        "POST", f"{WALLETS}/{activated.wallet}:deactivate", headers=activated.headers
    )
    assert stop.status == 200
    assert _run(api, activated).status == 409


def test_running_another_partners_wallet_is_403(
    api: RunningService, activated: Funded, make_partner: Any
) -> None:
    assert _run(api, activated, make_partner()).status == 403


def test_running_an_unknown_wallet_is_404(api: RunningService, keyed: dict[str, str]) -> None:
    response = api.request("POST", f"{WALLETS}/{UNKNOWN}:run", headers=keyed)
    assert response.status == 404
    assert "not found" in response.json()["detail"]


def _transactions(api: RunningService, funded: Funded) -> list[dict[str, Any]]:
    url = f"{WALLETS}/{funded.wallet}/transactions?limit=100&sort=date_asc"
    response = api.request("GET", url, headers=funded.headers)
    assert response.status == 200
    items: list[dict[str, Any]] = response.json()["transactions"]
    return items


def test_a_run_after_a_protocol_update_moves_the_funds(
    api: RunningService, activated: Funded
) -> None:
    wallet_url = f"{WALLETS}/{activated.wallet}"
    before = api.request("GET", wallet_url).json()
    held = set(before["current_protocols"])
    assert held
    target = next(p for p in reversed(PROTOCOLS) if p not in held)
    known = {t["transaction_hash"] for t in _transactions(api, activated)}
    update = api.request("PUT", wallet_url + "/protocols", [target], activated.headers)
    assert update.status == 204
    response = _run(api, activated)
    assert response.status == 200
    assert response.json() == {"status": "completed"}
    after = api.request("GET", wallet_url).json()
    assert after["current_protocols"] == [target]
    assert after["current_protocol"] == target
    assert after["selected_protocols"] == [target]
    moves = [t for t in _transactions(api, activated) if t["transaction_hash"] not in known]
    [correlation] = {t["correlation_id"] for t in moves}  # one run, one correlation id
    assert correlation
    withdrawn = {t["protocol"] for t in moves if t["action"] == "withdraw"}
    deposited = [t for t in moves if t["action"] == "deposit"]
    assert withdrawn == held, "every deselected position is drained"
    assert [t["protocol"] for t in deposited] == [target]
    assert {t["action"] for t in moves} == {"withdraw", "deposit"}
    assert all(t["status"] == "approved" and t["block_number"] for t in moves)
    withdrawn_total = sum(int(t["amount"]) for t in moves if t["action"] == "withdraw")
    assert int(deposited[0]["amount"]) >= withdrawn_total  # what left the old pools went in
    again = _run(api, activated)
    assert again.json() == {"status": "no_action"}  # nothing left to move
