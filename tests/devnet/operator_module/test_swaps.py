"""Reward claims and swaps: only listed rewards into the account's token, at no less than the
feeds' value less the bound, and never on a stale or bad feed."""

from __future__ import annotations

import pytest

from support.operator_module import MAX, THIEF, Account, call, refresh_feeds, swap_call, warp
from support.safe_world import COMP, USDC, contract

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
    net = acct.world.net
    d = net.d
    # the thief dumps COMP into the router's pool (its own COMP): COMP is ~10% cheaper there
    whale = d.actor("pool-mover")
    d.transact(acct.comp.functions.mint(whale, 5_000 * COMP))
    d.transact(acct.comp.functions.approve(acct.router, MAX), sender=whale)
    router = contract(net, "SwapRouter", acct.router)
    d.transact(
        router.functions.swap(acct.comp.address, acct.usdc.address, 5_000 * COMP, 0, whale),
        sender=whale,
    )
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
