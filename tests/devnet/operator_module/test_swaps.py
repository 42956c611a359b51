"""Reward claims and swaps: only listed rewards into the account's token, at no less than the
feeds' value less the bound, and never on a stale or bad feed."""

from __future__ import annotations

import pytest

from support.operator_module import (
    THIEF,
    Account,
    call,
    dump_reward,
    refresh_feeds,
    swap_call,
    warp,
)
from support.safe_world import COMP, USDC, contract
from yieldagent.devnet.anvil import rpc
from yieldagent.devnet.safe import COMP_PRICE, MAX_SLIPPAGE_BPS, USDC_PRICE

pytestmark = pytest.mark.evm


def test_claim_and_swap_rewards_into_the_account_token(acct: Account) -> None:
    world, a = acct.world, acct.address
    warp(world, 30 * 86_400)
    refresh_feeds(world)
    comp_before = acct.comp.functions.balanceOf(a).call()
    claim = call("claim(address,address,bool)", acct.comet.address, a, True)
    world.operator.transact(world.execute(a, [(acct.rewards, claim)]))
    comp = acct.comp.functions.balanceOf(a).call()
    assert comp > comp_before
    usdc_before = acct.usdc.functions.balanceOf(a).call()
    amount = 10 * COMP
    floor = world.module.functions.swapFloor(acct.comp.address, acct.usdc.address, amount).call()
    assert floor == 10 * 50 * USDC * 99 // 100  # 10 COMP at 50 USD, less 1%
    swap = call(
        "swap(address,address,uint256,uint256,address)",
        acct.comp.address,
        acct.usdc.address,
        amount,
        0,
        a,
    )
    world.operator.transact(world.execute(a, [(acct.router, swap)]))
    received = acct.usdc.functions.balanceOf(a).call() - usdc_before
    assert floor <= received < 500 * USDC
    assert acct.comp.functions.balanceOf(a).call() == comp - amount
    assert acct.comp.functions.allowance(a, acct.router).call() == 0


def test_no_swap_of_the_base_token_or_to_another_recipient(acct: Account) -> None:
    a, usdc, comp = acct.address, acct.usdc.address, acct.comp.address
    into_reward = swap_call(acct, usdc, comp, 1_000 * USDC, a)
    assert acct.refused([(acct.router, into_reward)]).startswith(
        ("NotRewardToken(", "NotAccountToken(")
    )
    elsewhere = swap_call(acct, comp, usdc, COMP, THIEF)
    assert acct.refused([(acct.router, elsewhere)]).startswith("NotAccount(")


def test_no_swap_below_the_feed_after_the_pool_is_moved(acct: Account) -> None:
    # the thief dumps COMP into the router's pool (its own COMP): COMP is ~10% cheaper there
    dump_reward(acct, 5_000 * COMP)
    reason = acct.refused(
        [
            (
                acct.router,
                swap_call(acct, acct.comp.address, acct.usdc.address, 10 * COMP, acct.address),
            )
        ]
    )
    assert reason.startswith("SwapBelowFeed(")


@pytest.mark.parametrize("feed_state", ["stale", "zero", "negative", "future"])
def test_no_swap_on_a_stale_or_bad_feed(acct: Account, feed_state: str) -> None:
    world = acct.world
    d = world.net.d
    safe = world.net.manifest.safe
    assert safe is not None
    feed = contract(world.net, "DevPriceFeed", safe.price_feeds[acct.comp.address])
    now = world.w3.eth.get_block("latest")["timestamp"]
    if feed_state == "stale":
        d.transact(feed.functions.setRound(50 * 10**8, now - 366 * 86_400))
    elif feed_state == "future":
        d.transact(feed.functions.setRound(50 * 10**8, now + 3_600))
    else:
        d.transact(feed.functions.setAnswer(0 if feed_state == "zero" else -1))
    swap = swap_call(acct, acct.comp.address, acct.usdc.address, COMP, acct.address)
    reason = acct.refused([(acct.router, swap)])
    assert reason.startswith(("StalePrice(", "BadPrice("))


def amount_out(amount_in: int, reserve_in: int, reserve_out: int) -> int:
    """The devnet router's constant-product quote (0.3% fee), to the unit."""
    with_fee = amount_in * 997
    return with_fee * reserve_out // (reserve_in * 1000 + with_fee)


def test_a_swap_just_inside_the_bound_is_what_a_thief_can_take(acct: Account) -> None:
    """The thief moves the pool, with COMP of its own, as far as the module lets the account's
    swap go: it yields the floor, 99% of the feeds' value, and one unit of COMP more sold into
    the pool first makes it revert. So a thief takes at most 1% of a reward swap's value
    (here 5 of 500 USDC), and pays the pool's fee twice on what it moved to do it."""
    world, a, net = acct.world, acct.address, acct.world.net
    comp, usdc, amount = acct.comp.address, acct.usdc.address, 10 * COMP
    value = amount * COMP_PRICE * USDC // (USDC_PRICE * COMP)  # 500 USDC at the feeds
    floor = world.module.functions.swapFloor(comp, usdc, amount).call()
    assert floor == value * (10_000 - MAX_SLIPPAGE_BPS) // 10_000 == 495 * USDC
    router = contract(net, "SwapRouter", acct.router)
    reserve_in, reserve_out = router.functions.getReserves(comp, usdc).call()

    def yields(dumped: int) -> int:  # what the account's swap yields after the thief's dump
        out = amount_out(dumped, reserve_in, reserve_out)
        return amount_out(amount, reserve_in + dumped, reserve_out - out)

    low, high = 0, reserve_in  # the most COMP the thief can dump with the swap still allowed
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if yields(middle) >= floor else (low, middle)
    assert yields(low) >= floor > yields(low + 1)
    snapshot = rpc(net.url, "evm_snapshot")
    dump_reward(acct, low + 1)
    assert router.functions.getAmountOut(comp, usdc, amount).call() == yields(low + 1)
    sell = [(acct.router, swap_call(acct, comp, usdc, amount, a))]
    assert acct.refused(sell).startswith("SwapBelowFeed(")
    assert rpc(net.url, "evm_revert", [snapshot]) is True
    got = dump_reward(acct, low, "sandwich")
    before = acct.usdc.functions.balanceOf(a).call()
    world.operator.transact(world.execute(a, sell))
    received = acct.usdc.functions.balanceOf(a).call() - before
    assert received == yields(low)
    assert 0 <= received - floor < USDC // 100  # the floor, to within a hundredth of a USDC
    assert value - received <= value // 100  # the account lost at most 1%
    # the thief buys its COMP back: the fees on what it moved cost it more than it took
    thief = net.d.actor("sandwich")
    d = net.d
    d.transact(acct.usdc.functions.approve(acct.router, got), sender=thief)
    d.transact(router.functions.swap(usdc, comp, got, 0, thief), sender=thief)
    back = acct.comp.functions.balanceOf(thief).call()
    assert back < low
