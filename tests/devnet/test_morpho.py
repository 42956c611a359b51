"""Morpho Blue on the net: the adaptive curve IRM to the wei, and the vault's allocation rule."""

from __future__ import annotations

from dataclasses import replace

import pytest
from web3.contract import Contract

from support.devnet import Devnet
from support.devnet_time import advance, frozen_time
from support.smart_account import USDC_UNIT
from yieldagent.composition.deployments import ProtocolDeployment
from yieldagent.devnet.borrowing import borrow_to_utilization
from yieldagent.devnet.morpho import SEED_ASSETS, SEED_SPLIT, VAULT_NAME
from yieldagent.devnet.tokens import mint_and_approve
from yieldagent.devnet.toolchain import compile_project
from yieldagent.domain.market.rate_models import RAY, SECONDS_PER_YEAR, MorphoBlue

pytestmark = pytest.mark.evm

WAD = 10**18
YEAR = 365 * 86400
TARGET = 9 * WAD // 10
SPEED = 50 * WAD // YEAR
INITIAL = 4 * WAD // 100 // YEAR
MIN_RATE = WAD // 1000 // YEAR
MAX_RATE = 2 * WAD // YEAR
LN2 = 693147180559945309
LN_WEI = -41446531673892822312
EXP_UPPER = 93859467695000404319


def _div0(a: int, b: int) -> int:
    """Solidity's signed division: truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _exp(x: int) -> int:
    if x < LN_WEI:
        return 0
    assert x < EXP_UPPER
    q = _div0(x + (-(LN2 // 2) if x < 0 else LN2 // 2), LN2)
    r = x - q * LN2
    exp_r = WAD + r + _div0(_div0(r * r, WAD), 2)
    return exp_r << q if q >= 0 else exp_r >> -q


def _curve(rate: int, err: int) -> int:
    coefficient = WAD - _div0(WAD * WAD, 4 * WAD) if err < 0 else 3 * WAD
    return _div0((_div0(coefficient * err, WAD) + WAD) * rate, WAD)


def _adapted(start: int, linear: int) -> int:
    return min(MAX_RATE, max(MIN_RATE, _div0(start * _exp(linear), WAD)))


def reference_rate(supply: int, borrow: int, start: int, elapsed: int) -> tuple[int, int]:
    """The adaptive curve IRM's (average borrow rate, new rate at target), per second (1e18),
    computed independently of the contract from the model's published rules."""
    u = borrow * WAD // supply if supply else 0
    err = _div0((u - TARGET) * WAD, WAD - TARGET if u > TARGET else TARGET)
    if start == 0:
        return _curve(INITIAL, err), INITIAL
    linear = _div0(SPEED * err, WAD) * elapsed
    if linear == 0:
        return _curve(start, err), start
    end = _adapted(start, linear)
    middle = _adapted(start, _div0(linear, 2))
    return _curve(_div0(start + end + 2 * middle, 4), err), end


def _contract(net: Devnet, name: str, address: str) -> Contract:
    return net.d.at(compile_project()[name], address)


def test_irm_matches_the_model_to_the_wei(net: Devnet) -> None:
    morpho = _contract(net, "Morpho", net.morpho.contracts["morpho"])
    irm = _contract(net, "AdaptiveCurveIrm", net.morpho.contracts["irm"])
    market = bytes.fromhex(net.morpho.markets[0][2:])
    params = morpho.functions.idToMarketParams(market).call()
    fresh = (params[0], params[1], params[2], params[3], 10**17)  # a market never touched
    start = irm.functions.rateAtTarget(market).call()  # set at creation, moved by the seed
    assert 0 < start <= INITIAL
    for supply, borrow in (
        (10**12, 0),
        (10**12, 5 * 10**11),
        (10**12, 9 * 10**11),
        (10**12, 10**12),
    ):
        got = irm.functions.borrowRateView(fresh, (supply, 0, borrow, 0, 0, 0)).call()
        assert got == reference_rate(supply, borrow, 0, 0)[0]
    # the adaptive path: rate at target drifts with the time since the market's last update
    now = net.w3.eth.get_block("latest")["timestamp"]
    for borrow in (0, 3 * 10**11, 8 * 10**11, 95 * 10**10, 10**12):
        for elapsed in (1, 3600, 30 * 86400, 400 * 86400):
            state = (10**12, 0, borrow, 0, now - elapsed, 0)
            got = irm.functions.borrowRateView(params, state).call(block_identifier="latest")
            assert got == reference_rate(10**12, borrow, start, elapsed)[0], (borrow, elapsed)


def test_irm_agrees_with_the_domain_rate_model(net: Devnet) -> None:
    """At the current rate at target, the contract's rate is the domain model's within 1e-8:
    on chain the rates are per-second integers (~3e8 wei), whose truncation alone is ~3e-9."""
    irm = _contract(net, "AdaptiveCurveIrm", net.morpho.contracts["irm"])
    morpho = _contract(net, "Morpho", net.morpho.contracts["morpho"])
    market = bytes.fromhex(net.morpho.markets[0][2:])
    params = morpho.functions.idToMarketParams(market).call()
    start = irm.functions.rateAtTarget(market).call()
    now = net.w3.eth.get_block("latest")["timestamp"]
    model = MorphoBlue.base_usdc()
    for borrow in (1, 3 * 10**11, 9 * 10**11, 97 * 10**10):
        per_second = irm.functions.borrowRateView(params, (10**12, 0, borrow, 0, now, 0)).call()
        expected = model.rates(10**12, borrow, start * SECONDS_PER_YEAR * 10**9).borrow
        got = per_second * SECONDS_PER_YEAR * 10**9
        assert abs(got - expected) <= expected // 10**8 + RAY // 10**18


def _vault_supply(net: Devnet) -> list[int]:
    """The vault's supply assets in each market, at the markets' stored state."""
    morpho = _contract(net, "Morpho", net.morpho.contracts["morpho"])
    result = []
    for market in net.morpho.markets:
        key = bytes.fromhex(market[2:])
        shares = morpho.functions.position(key, net.morpho.address).call()[0]
        total_assets, total_shares = morpho.functions.market(key).call()[:2]
        result.append(shares * (total_assets + 1) // (total_shares + 10**6))
    return result


def test_vault_shape(net: Devnet) -> None:
    vault = _contract(net, "Vault", net.morpho.address)
    assert vault.functions.name().call() == VAULT_NAME
    assert vault.functions.asset().call() == net.usdc
    assert vault.functions.fee().call() == 0
    ids = ["0x" + i.hex() for i in vault.functions.marketIds().call()]
    assert ids == list(net.morpho.markets)
    assert vault.functions.withdrawQueueLength().call() == len(SEED_SPLIT) == 4
    assert "0x" + vault.functions.withdrawQueue(2).call().hex() == net.morpho.markets[2]
    # the seed went 45/30/15/10; deploy_all's borrowers have made it earn since
    assert vault.functions.totalAssets().call() >= SEED_ASSETS
    seeded = [SEED_ASSETS * share // 100 for share in SEED_SPLIT]
    for held, seed in zip(_vault_supply(net), seeded, strict=True):
        assert seed <= held <= seed + seed // 100


def _accrue_all(net: Devnet) -> None:
    d, morpho = net.d, _contract(net, "Morpho", net.morpho.contracts["morpho"])
    for market in net.morpho.markets:
        params = morpho.functions.idToMarketParams(bytes.fromhex(market[2:])).call()
        d.transact(morpho.functions.accrueInterest(params))


def test_deposit_splits_in_proportion_remainder_to_the_first_market(net: Devnet) -> None:
    d, vault = net.d, _contract(net, "Vault", net.morpho.address)
    user = d.accounts[6]
    amount = 1_000_000 * USDC_UNIT + 7
    mint_and_approve(d, net.usdc, user, vault.address, amount)
    with frozen_time(net.url):
        _accrue_all(net)
        before = _vault_supply(net)
        d.transact(vault.functions.deposit(amount, user), sender=user)
        after = _vault_supply(net)
    parts = [amount * held // sum(before) for held in before]
    parts[0] += amount - sum(parts)
    moved = [a - b for a, b in zip(after, before, strict=True)]
    for got, part in zip(moved, parts, strict=True):
        assert part - 1 <= got <= part  # Morpho rounds the supply shares down
    assert vault.functions.maxWithdraw(user).call() in range(amount - 3, amount + 1)


def test_withdraw_takes_pro_rata_capped_by_liquidity_then_in_order(net: Devnet) -> None:
    d, vault = net.d, _contract(net, "Vault", net.morpho.address)
    morpho = _contract(net, "Morpho", net.morpho.contracts["morpho"])
    user = d.accounts[6]
    mint_and_approve(d, net.usdc, user, vault.address, 2_000_000 * USDC_UNIT)
    d.transact(vault.functions.deposit(2_000_000 * USDC_UNIT, user), sender=user)
    # borrow almost everything in market 1: the vault cannot take its pro-rata share there
    borrow_to_utilization(d, _only_market(net, 1), net.usdc, 0.999, min_supply=0)
    with frozen_time(net.url):
        _accrue_all(net)
        held = _vault_supply(net)
        available = []
        for market, h in zip(net.morpho.markets, held, strict=True):
            state = morpho.functions.market(bytes.fromhex(market[2:])).call()
            available.append(min(h, state[0] - state[2]))
        amount = 1_500_000 * USDC_UNIT
        d.transact(vault.functions.withdraw(amount, user, user), sender=user)
        after = _vault_supply(net)
    expected = [min(amount * h // sum(held), a) for h, a in zip(held, available, strict=True)]
    assert expected[1] == available[1] < amount * held[1] // sum(held)  # capped
    missing = amount - sum(expected)
    for i in range(len(held)):
        extra = min(missing, available[i] - expected[i])
        expected[i] += extra
        missing -= extra
    assert missing == 0
    taken = [b - a for b, a in zip(held, after, strict=True)]
    for got, want in zip(taken, expected, strict=True):
        assert want <= got <= want + 1  # Morpho burns the shares rounded up


def _only_market(net: Devnet, index: int) -> ProtocolDeployment:
    return replace(net.morpho, markets=(net.morpho.markets[index],))


def test_total_assets_accrue_and_redeem_returns_everything(net: Devnet) -> None:
    d, vault = net.d, _contract(net, "Vault", net.morpho.address)
    borrow_to_utilization(d, net.morpho, net.usdc, 0.9, min_supply=0)
    user = d.accounts[6]
    mint_and_approve(d, net.usdc, user, vault.address, 100_000 * USDC_UNIT)
    d.transact(vault.functions.deposit(100_000 * USDC_UNIT, user), sender=user)
    before = vault.functions.totalAssets().call()
    advance(net.url, 30 * 86400)
    grown = vault.functions.totalAssets().call()
    assert grown > before
    shares = vault.functions.balanceOf(user).call()
    value = vault.functions.convertToAssets(shares).call()
    assert value > 100_000 * USDC_UNIT
    usdc = _contract(net, "DevToken", net.usdc)
    d.transact(vault.functions.redeem(shares, user, user), sender=user)
    assert vault.functions.balanceOf(user).call() == 0
    assert usdc.functions.balanceOf(user).call() >= value
