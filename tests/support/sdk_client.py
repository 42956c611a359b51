"""The production TypeScript client's calls as the REST tests make them, and the shapes
its types declare for each answer, checked the same way on any chain."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from support.service import Response, RunningService

REWARD_AMOUNTS = {
    "locked",
    "unlocked",
    "locked_value",
    "locked_value_usd",
    "unlocked_value",
    "unlocked_value_usd",
    "claimed",
    "claimed_value",
    "claimed_value_usd",
}
"""The fields of each reward token's entry in a performance point's ``accrued_rewards``."""


class Client:
    """The calls of the production client for one chain and one partner."""

    def __init__(self, api: RunningService, headers: Mapping[str, str], chain: int = 8453) -> None:
        self._api = api
        self._headers = dict(headers)
        self.chain = chain

    def get(self, path: str, query: Mapping[str, Any] | None = None) -> Response:
        url = f"/api/v1/{path}" + (f"?{urlencode(query)}" if query else "")
        return self._api.request("GET", url, headers=self._headers)

    def ok(self, path: str, query: Mapping[str, Any] | None = None) -> Any:
        response = self.get(path, query)
        assert response.status == 200, (path, response.status, response.body)
        return response.json()

    def put(self, path: str, body: Any) -> Response:
        return self._api.request("PUT", f"/api/v1/{path}", body, self._headers)

    def wallet(self, wallet: str, tail: str) -> str:
        return f"{self.chain}/wallets/{wallet}/{tail}"


def number(value: Any) -> bool:
    """Whether ``value`` is a JSON number (the client's ``number``), not a boolean."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_pagination(body: Any, page: int, limit: int) -> None:
    """A page's ``pagination``: ``page`` (the client's name) beside ``current_page``."""
    pagination = body["pagination"]
    assert pagination["page"] == pagination["current_page"] == page
    assert pagination["items_per_page"] == limit
    assert isinstance(pagination["total_items"], int) and isinstance(pagination["total_pages"], int)


def check_config(body: Any, chain: int, token: str) -> None:
    """``GET /config``: the client's fields, and ``chain`` listing ``token``."""
    assert {
        "min_withdraw_usd",
        "optimizer_threshold_usd",
        "max_protocol_liquidity_percentage",
        "constraints",
        "chains",
    } <= set(body)
    assert number(body["min_withdraw_usd"]) and number(body["max_protocol_liquidity_percentage"])
    assert isinstance(body["constraints"]["kinds"], dict) and body["constraints"]["kinds"]
    assert body["chains"][str(chain)]["chain_id"] == chain
    assert token in body["chains"][str(chain)]["tokens"]


def check_supply(body: Any, token: str, decimals: int) -> list[str]:
    """``GET /{chain}/{token}/protocols/supply``: each pool's supply in tokens, beside the
    same amount in the token's smallest unit; returns the protocols' names."""
    assert set(body) == {"protocols"} and body["protocols"]
    for item in body["protocols"]:
        assert {"protocol", "supply", "tokens"} <= set(item)
        assert isinstance(item["protocol"], str) and number(item["supply"])
        assert item["tokens"] == [token]
        assert item["supply"] == item["supply_amount"] / 10**decimals > 0
    return [item["protocol"] for item in body["protocols"]]


def check_performance(body: Any) -> list[Any]:
    """``GET …/performance``: a series of points, each splitting its value by protocol;
    returns the series."""
    series: list[Any] = body["performance"]
    assert series
    for point in series:
        assert {"date", "value", "value_in_usd", "agent_token_amount"} <= set(point)
        assert isinstance(point["date"], str) and number(point["value"])
        assert point["agent_token_amount"] is None  # the service has no agent token
        for allocation in point.get("portfolio", {}).values():
            assert {"value", "value_in_usd", "base_apr", "total_apr"} <= set(allocation)
            assert number(allocation["value"]) and number(allocation["value_in_usd"])
        for rewards in point.get("accrued_rewards", {}).values():
            assert set(rewards) == REWARD_AMOUNTS
    return series


def check_apr_tokens(body: Any, token_price: float) -> None:
    """``GET …/apr/tokens``: a bare array, each value priced at ``token_price``."""
    assert isinstance(body, list) and body
    for item in body:
        assert {"value", "value_in_usd", "base_apr", "total_apr"} <= set(item)
        assert number(item["value"]) and number(item["total_apr"])
        assert abs(item["value_in_usd"] - token_price * item["value"]) <= 1e-9 * item["value"]


def check_execution(execution: Any) -> None:
    """One execution of ``GET …/executions``: an operation the service ran, with its plan
    and the transactions it sent."""
    assert {"id", "execution_plan", "execution_type", "status", "created_at", "transactions"} <= (
        set(execution)
    )
    assert execution["status"] in {"running", "failed", "success"}
    assert isinstance(execution["created_at"], str) and isinstance(execution["id"], str)
    for sent in execution["transactions"]:
        assert isinstance(sent["action"], str) and isinstance(sent["date"], str)
        assert isinstance(sent["amount"], int) and sent["correlation_id"] == execution["id"]


def check_logs(body: Any, page: int, limit: int) -> list[str]:
    """A page of ``{logs: [{type, data}], pagination}``; returns the entries' types."""
    check_pagination(body, page, limit)
    for entry in body["logs"]:
        assert isinstance(entry["type"], str) and isinstance(entry["data"], dict)
    return [entry["type"] for entry in body["logs"]]


def check_rewards(body: Any, page: int, limit: int) -> None:
    """``GET /{chain}/rewards/{wallet}``: the contract's ``is_staked`` beside the client's
    page of rewards."""
    assert isinstance(body["is_staked"], bool)
    check_pagination(body, page, limit)
    assert isinstance(body["rewards"], list)
    for reward in body["rewards"]:
        assert isinstance(reward["id"], str) and number(reward["reward_amount"])
        assert isinstance(reward["amount_units"], int) and reward["amount_units"] > 0


def check_fee(body: Any, percentage: float) -> None:
    """``GET …/fee``: the fee as the client reads it, beside its amounts in units."""
    assert number(body["percentage_fee"]) and body["percentage_fee"] == percentage
    assert number(body["fee"]) and body["fee"] >= 0
    assert isinstance(body["fee_amount"], int) and isinstance(body["charged_amount"], int)


def check_earnings(body: Any) -> None:
    """``GET …/earnings``: integer amounts per interval that sum to their totals."""
    assert isinstance(body["total_yield_amount"], int)
    assert isinstance(body["total_fee_amount"], int)
    for item in body["earnings"]:
        assert isinstance(item["date"], str)
        assert isinstance(item["yield_amount"], int) and isinstance(item["fee_amount"], int)
    assert sum(e["yield_amount"] for e in body["earnings"]) == body["total_yield_amount"]
    assert sum(e["fee_amount"] for e in body["earnings"]) == body["total_fee_amount"]


def check_history(body: Any) -> list[Any]:
    """``GET /{chain}/protocols/{protocol}/history``: the recorded points; returns them."""
    points: list[Any] = body["points"]
    for point in points:
        assert set(point) == {"time", "apy_base", "apy_rewards", "tvl", "utilization"}
        assert isinstance(point["time"], str)
    return points
