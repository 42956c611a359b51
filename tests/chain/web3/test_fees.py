"""EIP-1559 fees from the fee history, and the fees of a replacement."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.chain.web3.fees import GWEI, Fees, FeeSettings, bumped, fees_from_history

SETTINGS = FeeSettings()


def history(rewards: list[int], base_fees: list[int]) -> dict[str, object]:
    """An ``eth_feeHistory`` answer for one reward percentile."""
    return {"baseFeePerGas": base_fees, "reward": [[r] for r in rewards], "oldestBlock": 1}


def test_the_tip_is_the_median_reward_and_the_cap_twice_the_next_base_fee() -> None:
    no_floor = FeeSettings(priority_floor=0)
    fees = fees_from_history(history([5, 1, 9, 3, 7], [10, 11, 12, 13, 14, 100]), no_floor)
    assert fees == Fees(max_fee_per_gas=2 * 100 + 5, max_priority_fee_per_gas=5)
    even = fees_from_history(history([2 * GWEI, 4 * GWEI], [1, 1, GWEI]), SETTINGS)
    assert even == Fees(2 * GWEI + 3 * GWEI, 3 * GWEI)


def test_blocks_without_tips_get_the_floor() -> None:
    assert SETTINGS.priority_floor == GWEI // 1000  # 0.001 gwei
    fees = fees_from_history(history([0, 0, 0], [7, 7, 7, 8]), SETTINGS)
    assert fees == Fees(16 + GWEI // 1000, GWEI // 1000)
    mainnet = FeeSettings(priority_floor=GWEI)
    assert fees_from_history({"baseFeePerGas": [8], "reward": []}, mainnet) == Fees(16 + GWEI, GWEI)


def test_a_replacement_raises_both_fees_by_an_eighth_and_at_least_one_wei() -> None:
    assert bumped(Fees(1_000, 100)) == Fees(1_125, 113)  # 112.5 rounds up
    assert bumped(Fees(0, 0)) == Fees(1, 1)
    assert bumped(Fees(3, 1)) == Fees(4, 2)


@given(st.integers(0, 10**30), st.integers(0, 10**30))
def test_a_replacement_always_outbids_by_ten_percent(cap: int, tip: int) -> None:
    """geth replaces a pool transaction only for 10% more on both fields."""
    fees = Fees(max(cap, tip), tip)
    raised = bumped(fees)
    for old, new in [
        (fees.max_fee_per_gas, raised.max_fee_per_gas),
        (fees.max_priority_fee_per_gas, raised.max_priority_fee_per_gas),
    ]:
        assert new * 10 >= old * 11 and new > old


def test_fees_stay_consistent() -> None:
    with pytest.raises(ValueError, match="below the priority fee"):
        Fees(1, 2)
    assert Fees(5, 1).at_least(Fees(3, 2)) == Fees(5, 2)
    with pytest.raises(ValueError, match="at least one block"):
        FeeSettings(blocks=0)
