"""The risk guards' inputs from the chain: Aave's reserve switches read with its supply,
borrows and liquidity index in one batch at the head, and the guards' verdict on them when
the devnet's PoolConfigurator freezes or pauses the USDC reserve; the Comet's pause
switches, which only its governor or pause guardian sets; a Morpho vault's assets
and share price, which the loss guard watches, and the real bad debt that lowers it when
the collateral's oracle crashes and its borrowers are liquidated; the feed of the pegged
stable one of its markets lends against, which the depeg guard reads; and the Moonwell
Comptroller's pause guardian switch on supplying."""

from __future__ import annotations

import pytest

from support.web3_chain import ChainEnv
from yieldagent.chain.web3.protocols.aave import ACTIVE_BIT, FROZEN_BIT, PAUSED_BIT, switches
from yieldagent.devnet.actions import set_feed_price
from yieldagent.devnet.deployer import DeployError
from yieldagent.devnet.morpho import FEED_DECIMALS, PEGGED_SYMBOL
from yieldagent.devnet.switches import morpho_bad_debt
from yieldagent.devnet.toolchain import aave_artifact, compile_project
from yieldagent.devnet.usdc import ONE_USDC, mint, usdc_artifact
from yieldagent.domain.market.readings import RiskState
from yieldagent.domain.risk.guards import Exposure, Rule, assess
from yieldagent.domain.risk.settings import RiskSettings


def test_a_reserve_configuration_word_gives_its_switches() -> None:
    active = 1 << ACTIVE_BIT
    assert switches(active) == (False, False, False)
    assert switches(active | 1 << FROZEN_BIT) == (False, False, True)
    assert switches(active | 1 << PAUSED_BIT) == (True, True, False)
    assert switches(0) == (True, True, False)  # an inactive reserve stops everything
    assert switches(active | 0xFFFF) == (False, False, False)  # other fields do not count


@pytest.mark.evm
async def test_freezing_and_pausing_the_usdc_reserve_trip_the_pause_guard(env: ChainEnv) -> None:
    aave = env.devnet.manifest.protocol("aave")
    configurator = env.deployer.at(
        aave_artifact("PoolConfigurator"), aave.contracts["pool_configurator"]
    )
    [before] = await env.chain.pool_readings(env.token, ["aave"])
    assert before.protocol == "aave"
    assert not (before.now.frozen or before.now.supply_paused or before.now.withdraw_paused)
    assert before.now.tvl > before.now.borrows > 0
    assert before.now.share_price >= 10**27  # the liquidity index, RAY
    assert assess(before, Exposure(), RiskSettings()).state == RiskState.OK

    env.deployer.transact(configurator.functions.setReserveFreeze(env.token, True))
    [frozen] = await env.chain.pool_readings(env.token, ["aave"])
    assert frozen.now.frozen
    verdict = assess(frozen, Exposure(), RiskSettings())
    assert (verdict.state, verdict.reasons) == (RiskState.EXIT, ("the reserve is frozen",))

    env.deployer.transact(configurator.functions.setReserveFreeze(env.token, False))
    env.deployer.transact(configurator.functions.setReservePause(env.token, True))
    [paused] = await env.chain.pool_readings(env.token, ["aave"])
    assert paused.now.supply_paused and paused.now.withdraw_paused
    verdict = assess(paused, Exposure(), RiskSettings())
    assert (verdict.state, verdict.reasons) == (RiskState.NO_NEW_FUNDS, ("withdrawals are paused",))


@pytest.mark.evm
async def test_pausing_the_comets_supply_trips_the_pause_guard_and_only_its_governor_may(
    env: ChainEnv,
) -> None:
    d = env.deployer
    comet = d.at(compile_project()["Comet"], env.devnet.manifest.protocol("compound").address)
    [before] = await env.chain.pool_readings(env.token, ["compound"])
    [quote] = await env.chain.quotes(env.token, ["compound"])
    assert before.protocol == "compound"
    assert not before.now.paused
    assert before.now.tvl == quote.total_supply > before.now.borrows > 0
    assert assess(before, Exposure(), RiskSettings()).state == RiskState.OK

    stranger = d.accounts[7]
    with pytest.raises(DeployError, match="Unauthorized"):
        d.transact(comet.functions.pause(True, False, False, False, False), sender=stranger)
    assert not comet.functions.isSupplyPaused().call()

    d.transact(comet.functions.pause(True, False, False, False, False))  # the governor
    [paused] = await env.chain.pool_readings(env.token, ["compound"])
    assert paused.now.supply_paused and not paused.now.withdraw_paused
    verdict = assess(paused, Exposure(), RiskSettings())
    assert (verdict.state, verdict.reasons) == (RiskState.EXIT, ("supply is paused",))
    mint(d, env.token, stranger, 10 * ONE_USDC)
    usdc = d.at(usdc_artifact(), env.token)
    d.transact(usdc.functions.approve(comet.address, 2**256 - 1), sender=stranger)
    with pytest.raises(DeployError, match="Paused"):
        d.transact(comet.functions.supply(env.token, ONE_USDC), sender=stranger)

    d.transact(comet.functions.pause(False, False, True, False, False))
    [withdrawals] = await env.chain.pool_readings(env.token, ["compound"])
    assert withdrawals.now.withdraw_paused and not withdrawals.now.supply_paused
    verdict = assess(withdrawals, Exposure(), RiskSettings())
    assert (verdict.state, verdict.reasons) == (RiskState.NO_NEW_FUNDS, ("withdrawals are paused",))
    d.transact(comet.functions.supply(env.token, ONE_USDC), sender=stranger)  # supply reopened
    with pytest.raises(DeployError, match="Paused"):
        d.transact(comet.functions.withdraw(env.token, ONE_USDC), sender=stranger)


@pytest.mark.evm
async def test_a_vaults_reading_is_its_assets_and_share_price(env: ChainEnv) -> None:
    name = next(p for p in env.chain.pools if p.startswith("morpho"))
    [vault] = await env.chain.pool_readings(env.token, [name])
    [quote] = await env.chain.quotes(env.token, [name])
    assert vault.now.tvl == quote.total_supply > 0
    assert vault.now.tvl - vault.now.borrows == min(quote.cash, vault.now.tvl)
    assert vault.now.share_price > 0
    env.mine(seconds=86_400)  # interest: the share price never falls on its own
    [later] = await env.chain.pool_readings(env.token, [name])
    assert later.now.share_price >= vault.now.share_price
    assert assess(later, Exposure(), RiskSettings()).state == RiskState.OK


@pytest.mark.evm
async def test_bad_debt_in_a_vaults_market_lowers_its_share_price_and_trips_the_loss_guard(
    env: ChainEnv,
) -> None:
    name = next(p for p in env.chain.pools if p.startswith("morpho"))
    deployment = env.devnet.manifest.protocol(name)
    [before] = await env.chain.pool_readings(env.token, [name])

    assert morpho_bad_debt(env.deployer, deployment, env.token)  # liquidated someone
    env.mine()

    [after] = await env.chain.pool_readings(env.token, [name])
    assert after.now.share_price < before.now.share_price
    assert after.now.tvl < before.now.tvl
    # the service remembers the highest share price it saw (the web3 reading has no history)
    seen = Exposure(peak_share_price=before.now.share_price)
    verdict = assess(after, seen, RiskSettings())
    assert verdict.state == RiskState.EXIT
    assert Rule.LOSS in verdict.rules


@pytest.mark.evm
async def test_the_moonwell_guardian_pausing_supply_trips_the_pause_guard(env: ChainEnv) -> None:
    d = env.deployer
    artifacts = compile_project()
    deployment = env.devnet.manifest.protocol("moonwell")
    comptroller = d.at(artifacts["Comptroller"], deployment.contracts["comptroller"])
    mtoken = d.at(artifacts["MToken"], deployment.address)
    [before] = await env.chain.pool_readings(env.token, ["moonwell"])
    [quote] = await env.chain.quotes(env.token, ["moonwell"])
    assert before.protocol == "moonwell"
    assert not before.now.paused
    assert before.now.tvl == quote.total_supply > before.now.borrows > 0
    assert before.now.share_price == mtoken.functions.exchangeRateStored().call() > 0
    assert assess(before, Exposure(), RiskSettings()).state == RiskState.OK

    stranger = d.accounts[7]
    with pytest.raises(DeployError, match="only pause guardian and admin can pause"):
        d.transact(comptroller.functions._setMintPaused(mtoken.address, True), sender=stranger)
    d.transact(comptroller.functions._setMintPaused(mtoken.address, True))  # the guardian
    [paused] = await env.chain.pool_readings(env.token, ["moonwell"])
    assert paused.now.supply_paused and not paused.now.withdraw_paused
    verdict = assess(paused, Exposure(), RiskSettings())
    assert (verdict.state, verdict.reasons) == (RiskState.EXIT, ("supply is paused",))
    mint(d, env.token, stranger, 10 * ONE_USDC)
    usdc = d.at(usdc_artifact(), env.token)
    d.transact(usdc.functions.approve(mtoken.address, 2**256 - 1), sender=stranger)
    with pytest.raises(DeployError, match="mint is paused"):
        d.transact(mtoken.functions.mint(ONE_USDC), sender=stranger)

    d.transact(comptroller.functions._setMintPaused(mtoken.address, False))  # the admin
    [reopened] = await env.chain.pool_readings(env.token, ["moonwell"])
    assert not reopened.now.paused
    d.transact(mtoken.functions.mint(ONE_USDC), sender=stranger)


@pytest.mark.evm
async def test_a_vault_reads_its_pegged_collaterals_feed_and_a_depeg_trips_its_guard(
    env: ChainEnv,
) -> None:
    name = next(p for p in env.chain.pools if p.startswith("morpho"))
    deployment = env.devnet.manifest.protocol(name)
    [(token, listed)] = env.devnet.manifest.collateral_feeds.items()
    assert (token, listed["feed"]) == (
        deployment.contracts["pegged_collateral"],
        deployment.contracts["pegged_feed"],
    )
    par = 10**FEED_DECIMALS
    await env.chain.pool_readings(env.token, [name])  # resolves the vault and the feed
    env.mine()
    env.calls.reset()
    [at_par] = await env.chain.pool_readings(env.token, [name])
    assert env.calls.requests == 2  # the head, then the vault's and the feed's reads at it
    env.calls.reset()
    assert await env.chain.pool_readings(env.token, [name]) == [at_par]
    assert env.calls.methods == ["eth_getBlockByNumber"]  # the same block: read once
    [feed] = at_par.collateral
    assert (feed.token, feed.price, feed.peg, feed.readable) == (PEGGED_SYMBOL, par, par, True)
    assert feed.updated_at is not None and 0 < feed.updated_at <= at_par.now.at
    assert assess(at_par, Exposure(), RiskSettings()).state == RiskState.OK

    set_feed_price(env.devnet.url, listed["feed"], "0.951")  # 4.9% below: within the band
    [near] = await env.chain.pool_readings(env.token, [name])
    assert [(f.price, f.peg) for f in near.collateral] == [(95_100_000, par)]
    assert assess(near, Exposure(), RiskSettings()).state == RiskState.OK

    set_feed_price(env.devnet.url, listed["feed"], "0.95")
    [fallen] = await env.chain.pool_readings(env.token, [name])
    verdict = assess(fallen, Exposure(), RiskSettings())
    assert (verdict.state, verdict.rules) == (RiskState.EXIT, (Rule.DEPEG,))
    assert verdict.reasons == (f"collateral {PEGGED_SYMBOL} is 5% or more below its peg",)

    # a chain configured with no feed reads no collateral: the guard has nothing to judge
    [unwatched] = await env.build(collateral_feeds=()).pool_readings(env.token, [name])
    assert unwatched.collateral == ()


@pytest.mark.evm
async def test_a_stale_or_unreadable_feed_vouches_for_nothing(env: ChainEnv) -> None:
    name = next(p for p in env.chain.pools if p.startswith("morpho"))
    [(_, listed)] = env.devnet.manifest.collateral_feeds.items()
    [fresh] = await env.chain.pool_readings(env.token, [name])
    assert assess(fresh, Exposure(), RiskSettings()).state == RiskState.OK

    # A feed silent for longer than the deployment allows; a minute stands for the 25
    # hours of the default, since the devnet's clock, once moved on, stays moved for the
    # tests after this one (its snapshots do not take the clock back).
    strict = RiskSettings(max_feed_age_seconds=60)
    env.mine(seconds=120)
    [stale] = await env.chain.pool_readings(env.token, [name])
    assert assess(stale, Exposure(), RiskSettings()).state == RiskState.OK
    verdict = assess(stale, Exposure(), strict)
    assert (verdict.state, verdict.rules) == (RiskState.NO_NEW_FUNDS, (Rule.DEPEG,))
    assert verdict.reasons == (
        f"the price feed of collateral {PEGGED_SYMBOL} is stale or cannot be read",
    )
    set_feed_price(env.devnet.url, listed["feed"], "1")  # a new answer
    [answered] = await env.chain.pool_readings(env.token, [name])
    assert assess(answered, Exposure(), strict).state == RiskState.OK

    env.deployer.anvil("anvil_setCode", listed["feed"], "0x")  # the feed is gone
    env.mine()  # a block's readings are kept: anvil changed this one's state in place
    [gone] = await env.chain.pool_readings(env.token, [name])  # the survey still reads
    assert [f.readable for f in gone.collateral] == [False]
    verdict = assess(gone, Exposure(), RiskSettings())
    assert (verdict.state, verdict.rules) == (RiskState.NO_NEW_FUNDS, (Rule.DEPEG,))
