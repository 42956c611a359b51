"""The web3 adapter on a fresh devnet: quote reads per block, one run's chain calls, and an
agent cycle of many wallets.

Runs only with ``BENCH_DEVNET=1`` (``BENCH_DEVNET=1 make bench``, or ``python -m
benchmarks.devnet_cycle``). It starts anvil on a free port, deploys the devnet
(``deploy_all``) and builds the service's own objects as ``app.py`` does (settings from the
environment variables the service reads, ``build_chains``, ``build_lifecycle``,
``build_agent``) on a temporary SQLite database. The chain port talks to anvil through a
counting proxy (``rpc_counter``), so every JSON-RPC request the service makes is counted,
the Safe accounts' deployments through the factory included.

1. ``quote_reads``: HTTP requests and ``eth_call`` per block of a quote of the 4 pools (the
   first quote, which also resolves what each pool derives once, is reported apart).
2. ``run_chain_calls``: one wallet on Aave and Morpho; the pool it does not hold gets a
   higher utilization, and one agent run moves the funds: its requests, calls by method,
   and transactions.
3. ``agent_cycle``: ``BENCH_DEVNET_WALLETS`` (default 200) smart accounts, each created
   in the smart-account store as the servicer does and funded by an ERC-20 transfer (one
   mint to a funder, then one transfer per account); from then on anvil mines a block
   every ``BENCH_DEVNET_BLOCK_SECONDS`` (2, as Base does). The accounts are activated
   through the lifecycle, ``BENCH_DEVNET_CONCURRENCY`` at a time (8, as concurrent API
   calls would); cycles place what the set-up left idle until one moves nothing; then
   ``BENCH_DEVNET_NO_MOVE_WALLETS`` (50) run a cycle that moves nothing, which gives the
   node's cost per wallet and per day at the default cadence. Unless
   ``BENCH_DEVNET_MOVING=0``, the set-up's moves are taken to be a day old (past the
   guards' minimum wait after a move), the pool held least has its utilization pushed up,
   over a supply deep enough that the fleet's arrival leaves it above its rate model's
   kink, and every wallet moves: ``BENCH_DEVNET_SERIAL_WALLETS`` (20) by today's path
   (the books send each move on its own and await its receipt before the next), the rest
   pipelined (a round's moves as one batch, ``Web3Chain.send_many``), against the same
   proxy. With ``YIELDAGENT_TEST_DATABASE_URL`` the cycle runs on PostgreSQL, and the
   rest is halved: one replica moves one half, two replicas (two agents on one database
   and one operator key) the other. Figure 3 has a devnet of its own.
   ``BENCH_DEVNET_CYCLE_ONLY=1`` skips figures 1 and 2. ``BENCH_DEVNET_ACTIVATIONS``
   (200) of the wallets are activated through the proxy; the rest, and
   ``BENCH_DEVNET_EXIT_WALLETS`` (0) on the Morpho vault alone, are set up straight on
   anvil first. With ``YIELDAGENT_ACTIVATION_PLACEMENT=background`` the activations are
   finished as the worker does, its passes running alongside the calls (the worker's own
   objects, through a proxy of its own: its requests are counted apart; the set-up's
   wallets are not due meanwhile), and the time from the first call until all are placed
   is reported. Last, the vault's collateral feed falls to 0.90 with no wallet due, the
   worker's watch of the guards finds it, and the time from the fall's block until no
   wallet holds the vault is the fleet exit figure.

The proxy's round trip is ``BENCH_DEVNET_ROUND_TRIP_MS`` (or ``BENCH_DEVNET_RTT_MS``;
default 50).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar, cast

from eth_account import Account
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from hexbytes import HexBytes
from sqlalchemy import Engine, bindparam, text
from web3 import HTTPProvider, Web3

from benchmarks.rpc_proxy import RpcCounts, RpcProxy, proxied
from yieldagent.catalog import load_catalog
from yieldagent.chain.operator import load_operator_wallet
from yieldagent.chain.web3.adapter import Web3Chain
from yieldagent.composition.chains import (
    build_chains,
    safe_chains,
    served_catalog,
    simulated_market,
)
from yieldagent.composition.compose import (
    ACTIVATION_PASS_SECONDS,
    activation_placement,
    build_agent,
    build_lifecycle,
)
from yieldagent.composition.deployments import Manifest
from yieldagent.config import load_settings
from yieldagent.devnet import actions
from yieldagent.devnet.aave import DEFAULT_SUPPLY as AAVE_SUPPLY
from yieldagent.devnet.aave import borrow_to_utilization_aave
from yieldagent.devnet.anvil import Anvil, free_port, rpc
from yieldagent.devnet.borrowing import MIN_SUPPLY, borrow_to_utilization
from yieldagent.devnet.deploy import deploy_all
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.tokens import mint_and_approve
from yieldagent.devnet.toolchain import compile_project
from yieldagent.devnet.usdc import mint, usdc_artifact
from yieldagent.domain.agent.runs import Agent
from yieldagent.domain.agent.scheduler import AgentSettings
from yieldagent.domain.constraints import Constraints, Thresholds
from yieldagent.domain.money.deposits import ActivationPlacement, ActivationRequest
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.partners.smart_accounts import (
    DEFAULT_AGENT_ID,
    AccountKey,
    SafeChains,
    open_account,
)
from yieldagent.domain.ports.accounts import Provider
from yieldagent.observability.agent_metrics import RunMetrics
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.runs import RunStore
from yieldagent.storage.smart_accounts import SmartAccountStore
from yieldagent.storage.wallets import WalletStore

BASE = 8453
OPERATOR_KEY = "0x" + "3c" * 32
USDC_UNIT = 10**6
DEPOSIT = 1_000 * USDC_UNIT
AAVE, MORPHO = "aave", "morpho_gauntlet_usdc_prime"
PUSHED_UTILIZATION = {AAVE: 0.97}
"""How high a pool is pushed to draw funds (0.99 for the pools not named here)."""
DEFAULT_INTERVAL_SECONDS = 3600.0
"""``YIELDAGENT_AGENT_INTERVAL_SECONDS``' default: the cadence the per-day cost is told at."""
SETUP_CONCURRENCY = 64
"""Activations at once while the fleet is set up straight on anvil."""
ROOM_MULTIPLE = 10
"""How many times the exit wallets' funds the Morpho vault holds (the guards cap the
fleet's share of a pool at 15%)."""
ARRIVED_UTILIZATION = 0.95
"""The pushed pool's utilization once every wallet of the moving cycle has moved in: above
the kink of each pool's rate model (Aave's is at 0.90), so that its rate still pays for
the last wallet's move as it did for the first. Pushed to 0.97 over ten times the fleet's
funds, Aave fell to 0.88 as the fleet arrived, its rate to a few points, and the last
third of 1,000 wallets stayed where they were."""
EXIT_PATIENCE_SECONDS = 600.0
"""How long the fleet exit figure waits for the last wallet to leave the vault."""
WATCH_SECONDS = load_settings({}).guard_watch_seconds
"""How often the worker watches the guards (``YIELDAGENT_GUARD_WATCH_SECONDS``' default)."""
SET_UP_AGE_SECONDS = 86_400.0
"""How long before the moving cycle the set-up's moves are taken to have been made: more
than the guards' minimum wait after a move (``YIELDAGENT_RISK_MIN_WAIT_SECONDS``)."""
SETTLING_CYCLES = 4
"""Most cycles run to settle the fleet before the cycle that moves nothing."""
NEVER_AGAIN = 1e9
"""The agent's interval: longer than any cycle, so that each wallet runs once per cycle."""
HEAD_LAPSE_SECONDS = load_settings({}).head_reuse_seconds + 0.1
"""Long enough for the chain port's kept head to lapse (``YIELDAGENT_HEAD_REUSE_SECONDS``)."""

T = TypeVar("T")


def _emit(**figures: object) -> None:
    print(json.dumps({"benchmark": "devnet", **figures}), flush=True)


@dataclass
class Service:
    """The service's domain objects on one database, its chain port behind the proxy."""

    engine: Engine
    chain: Web3Chain
    chains: dict[int, Any]
    """The chain ports the use cases were built with (the same mapping)."""
    lifecycle: Lifecycle
    agent: Agent
    partner_id: int
    safes: SafeChains

    @classmethod
    def build(
        cls,
        rpc_url: str,
        manifest_path: Path,
        manifest: Manifest,
        data: Path,
        database_url: str | None = None,
        partner_id: int | None = None,
        placement: str = "inline",
    ) -> Service:
        """Builds the objects as ``app.Service.start`` does, from the service's settings;
        on ``database_url`` (SQLite in ``data`` by default). With ``partner_id``, a
        replica: another process's objects on the same database and partner.
        ``placement``: ``YIELDAGENT_ACTIVATION_PLACEMENT``."""
        settings = load_settings(
            {
                "YIELDAGENT_DATA_DIR": str(data),
                "YIELDAGENT_DATABASE_URL": database_url or f"sqlite:///{data / 'bench.db'}",
                "YIELDAGENT_ENV": "devnet",
                "YIELDAGENT_RPC_URL_8453": rpc_url,
                "YIELDAGENT_DEPLOYMENT_8453": str(manifest_path),
                "YIELDAGENT_OPERATOR_PRIVATE_KEY": OPERATOR_KEY,
                "YIELDAGENT_FEE_COLLECTOR": manifest.extras["fee_collector"],
                "YIELDAGENT_AGENT_INTERVAL_SECONDS": str(NEVER_AGAIN),
                "YIELDAGENT_AGENT_BATCH": os.environ.get("YIELDAGENT_AGENT_BATCH", "100"),
                "YIELDAGENT_AGENT_CONCURRENT_BATCHES": os.environ.get(
                    "YIELDAGENT_AGENT_CONCURRENT_BATCHES", "2"
                ),
                "YIELDAGENT_ACTIVATION_PLACEMENT": placement,
            }
        )
        data.mkdir(parents=True, exist_ok=True)
        engine = create_db_engine(settings.database_url)
        if partner_id is None:
            migrate(engine)
        operator = load_operator_wallet(settings)
        catalog = served_catalog(settings, load_catalog())
        market = simulated_market(settings, engine, catalog)
        chains = build_chains(settings, engine, market, catalog, operator)
        chain = chains[BASE]
        assert isinstance(chain, Web3Chain)
        lifecycle = build_lifecycle(settings, engine, chains, catalog, operator.address)
        agent = build_agent(settings, engine, lifecycle)
        if partner_id is None:
            partner_id = PartnerStore(engine).create("bench-devnet", PERMISSIONS)[0].id
        safes = safe_chains(settings, catalog, operator.address)
        return cls(engine, chain, chains, lifecycle, agent, partner_id, safes)

    def with_batch(self, batch: int) -> Service:
        """The same objects with an agent that claims ``batch`` wallets at a time (as
        ``build_agent`` builds it otherwise), so that replicas share a phase's wallets."""
        settings = load_settings({"YIELDAGENT_AGENT_INTERVAL_SECONDS": str(NEVER_AGAIN)})
        thresholds = Thresholds(
            min_apr_gain=settings.min_apr_gain, max_break_even_days=settings.max_break_even_days
        )
        agent = Agent(
            self.lifecycle,
            WalletStore(self.engine),
            RunStore(self.engine),
            AgentSettings(settings.agent_interval_seconds, thresholds, batch),
            RunMetrics(),
            self.lifecycle.risk,
        )
        return replace(self, agent=agent)

    def account(self, eoa: str) -> str:
        """The Safe account of ``eoa``, recorded as ``CreateSafeAccount`` records it."""
        key = AccountKey(BASE, to_checksum_address(eoa), DEFAULT_AGENT_ID)
        store = SmartAccountStore(self.engine)
        return open_account(store, key, self.partner_id, Provider.SAFE, self.safes).address

    async def activate(
        self, account: str, eoa: str, token: str, tx_hash: str, protocols: Sequence[str] = ()
    ) -> None:
        """Activates ``account`` on ``protocols`` (every pool by default), as
        ``ActivateWallet`` does."""
        request = ActivationRequest(
            wallet=account,
            eoa=to_checksum_address(eoa),
            token=token,
            protocols=tuple(protocols) or tuple(p.name for p in self.chain.config.protocols),
            tx_hash=tx_hash,
            constraints=Constraints(),
        )
        await self.lifecycle.activate(self.partner_id, BASE, request)

    def run_outcomes(self) -> Counter[str]:
        """Runs recorded so far, by status."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                text("SELECT status, count(*) FROM operations WHERE kind = 'run' GROUP BY status")
            ).all()
        return Counter({str(status): int(n) for status, n in rows})

    def unmoved(self, accounts: Sequence[str]) -> Counter[str]:
        """Why the last run of each of ``accounts``' wallets moved nothing, by the first
        words of its reason."""
        wanted = [a.lower() for a in accounts]
        if not wanted:  # PostgreSQL types an empty expanded list as integers
            return Counter()
        with self.engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT s.last_outcome, s.last_reason FROM wallet_schedule s "
                    "JOIN wallets w ON w.id = s.wallet_id WHERE lower(w.address) IN :wanted "
                    "AND s.last_outcome != 'completed'"
                ).bindparams(bindparam("wanted", expanding=True)),
                {"wanted": wanted},
            ).all()
        return Counter(f"{status}: {str(reason)[:60]}" for status, reason in rows)

    def failures(self) -> Counter[str]:
        """Failed runs so far, by the first words of their reason."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                text("SELECT reason FROM operations WHERE kind = 'run' AND status = 'failed'")
            ).all()
        return Counter(str(reason)[:100] for (reason,) in rows)

    async def close(self) -> None:
        """Closes the chain port's HTTP session (it belongs to the running event loop)."""
        await self.chain.w3.provider.disconnect()

    def age_moves(self, seconds: float) -> None:
        """Every wallet's last move ``seconds`` further back, as if the set-up had run that
        much earlier."""
        with self.engine.begin() as connection:
            connection.execute(
                text(
                    "UPDATE wallet_schedule SET last_moved_at = last_moved_at - :seconds "
                    "WHERE last_moved_at IS NOT NULL"
                ),
                {"seconds": seconds},
            )

    def make_all_due(self) -> None:
        """Every wallet's next run: now."""
        with self.engine.begin() as connection:
            connection.execute(text("UPDATE wallet_schedule SET next_run_at = 0"))

    def make_due(self, accounts: Sequence[str]) -> None:
        """The next run of ``accounts``' wallets: now; every other wallet's: much later."""
        wanted = [a.lower() for a in accounts]
        with self.engine.begin() as connection:
            connection.execute(
                text("UPDATE wallet_schedule SET next_run_at = :later"), {"later": 1e12}
            )
            if not wanted:  # PostgreSQL types an empty expanded list as integers
                return
            connection.execute(
                text(
                    "UPDATE wallet_schedule SET next_run_at = 0 WHERE wallet_id IN "
                    "(SELECT id FROM wallets WHERE lower(address) IN :wanted)"
                ).bindparams(bindparam("wanted", expanding=True)),
                {"wanted": wanted},
            )


async def _counted(counter: RpcProxy, work: Awaitable[T]) -> tuple[T, RpcCounts, float]:
    before = counter.snapshot()
    started = time.perf_counter()
    result = await work
    return result, counter.snapshot().minus(before), time.perf_counter() - started


def _eoa(label: str) -> str:
    return to_checksum_address(keccak(text=f"bench-devnet-eoa:{label}")[12:])


def _positions(chain: Web3Chain, holder: str) -> Awaitable[dict[str, int]]:
    async def read() -> dict[str, int]:
        found = await chain.positions(holder, chain.config.token)
        return {p.protocol: p.amount for p in found}

    return read()


def _deepen_vault(url: str, manifest: Manifest, amount: int) -> None:
    """A supplier deposits ``amount`` more into the Morpho vault, so that the guards'
    pool-share cap leaves room for the vault's wallets (the devnet seeds it with 1 M)."""
    d = Deployer(url)
    vault = d.at(compile_project()["Vault"], manifest.protocol(MORPHO).address)
    supplier = d.actor("bench-devnet-vault-supplier")
    mint_and_approve(d, manifest.token, supplier, vault.address, amount)
    d.transact(vault.functions.deposit(amount, supplier), sender=supplier)


def _push(url: str, manifest: Manifest, protocol: str, arriving: int = 0) -> None:
    """Raises ``protocol``'s utilization, so that its rate draws funds. With ``arriving``
    (base units the fleet will move in), its suppliers first deepen it so that, once they
    have arrived, its utilization is still ``ARRIVED_UTILIZATION``: the rate draws every
    wallet, and the risk guards' pool-share cap leaves room for every move."""
    d = Deployer(url)
    deployment = manifest.protocol(protocol)
    utilization = PUSHED_UTILIZATION.get(protocol, 0.99)
    # borrowed / (depth + arriving) = ARRIVED_UTILIZATION, borrowed = utilization * depth
    depth = int(arriving * ARRIVED_UTILIZATION / (utilization - ARRIVED_UTILIZATION))
    if deployment.kind == "aave_v3":
        supply = max(AAVE_SUPPLY, depth)
        borrow_to_utilization_aave(d, deployment, manifest.token, utilization, supply=supply)
    else:
        supply = max(MIN_SUPPLY, depth)
        borrow_to_utilization(d, deployment, manifest.token, utilization, min_supply=supply)


# -- 1. quote reads ----------------------------------------------------------------------


async def quote_reads(service: Service, counter: RpcProxy, url: str, blocks: int = 5) -> None:
    """Requests per block of a quote of every pool."""
    chain = service.chain
    names = [p.name for p in chain.config.protocols]
    quotes, first, _ = await _counted(counter, chain.quotes(chain.config.token, names))
    _emit(
        figure="quote_reads_first",
        pools=len(quotes),
        http_requests=first.requests,
        jsonrpc_calls=first.calls,
        eth_calls=first.eth_calls,
        methods=first.methods,
    )
    total = RpcCounts()
    stats = chain.reader.stats
    reader_before = (stats.requests, stats.calls)
    seconds = 0.0
    for _ in range(blocks):
        rpc(url, "evm_mine")
        await asyncio.sleep(HEAD_LAPSE_SECONDS)  # a new block once the kept head lapses
        _, counts, took = await _counted(counter, chain.quotes(chain.config.token, names))
        total = RpcCounts(
            total.requests + counts.requests,
            dict(Counter(total.methods) + Counter(counts.methods)),
        )
        seconds += took
    _emit(
        figure="quote_reads_per_block",
        pools=len(names),
        blocks=blocks,
        http_requests=total.requests / blocks,
        jsonrpc_calls=total.calls / blocks,
        eth_calls=total.eth_calls / blocks,
        methods={m: n / blocks for m, n in total.methods.items()},
        reader_stats_requests=(stats.requests - reader_before[0]) / blocks,
        reader_stats_calls=(stats.calls - reader_before[1]) / blocks,
        ms=round(seconds / blocks * 1000, 1),
    )


# -- 2. one run that moves funds ---------------------------------------------------------


async def run_chain_calls(
    service: Service, counter: RpcProxy, url: str, manifest: Manifest
) -> None:
    """One wallet on Aave and Morpho; the other pool's utilization jumps; one run moves."""
    eoa = _eoa("single-run")
    account = service.account(eoa)
    deposit = actions.deposit(url, manifest.token, eoa, account, 10_000 * USDC_UNIT)
    request = ActivationRequest(
        wallet=account,
        eoa=eoa,
        token=manifest.token,
        protocols=(AAVE, MORPHO),
        tx_hash=deposit["tx_hash"],
        constraints=Constraints(),
    )
    # The deposit went straight to anvil: the service's kept head has not seen it, and a
    # call before the head lapses is told to retry, as a partner's would be.
    await asyncio.sleep(HEAD_LAPSE_SECONDS)
    _, activation, seconds = await _counted(
        counter, service.lifecycle.activate(service.partner_id, BASE, request)
    )
    _emit(
        figure="activation_chain_calls",
        http_requests=activation.requests,
        jsonrpc_calls=activation.calls,
        eth_calls=activation.eth_calls,
        transactions=activation.transactions,
        methods=activation.methods,
        seconds=round(seconds, 2),
    )
    placed = await _positions(service.chain, account)
    holder = max(placed, key=lambda name: placed[name])
    other = MORPHO if holder == AAVE else AAVE
    service.age_moves(SET_UP_AGE_SECONDS)  # past the guards' minimum wait after a move
    _push(url, manifest, other)
    await asyncio.sleep(HEAD_LAPSE_SECONDS)  # the run reads the pushed pool's block
    outcome, counts, seconds = await _counted(counter, service.agent.run(BASE, account))
    moved = await _positions(service.chain, account)
    _emit(
        figure="run_chain_calls",
        status=outcome.status,
        reason=outcome.reason,
        moved_from=holder,
        moved_to=other,
        before=placed,
        after=moved,
        http_requests=counts.requests,
        jsonrpc_calls=counts.calls,
        eth_calls=counts.eth_calls,
        transactions=counts.transactions,
        methods=counts.methods,
        seconds=round(seconds, 2),
    )


# -- 3. the agent cycle ------------------------------------------------------------------


def _fund_accounts(url: str, manifest: Manifest, accounts: list[str]) -> list[str]:
    """One mint to a funder, then one ERC-20 transfer of ``DEPOSIT`` to each account;
    returns the transfers' hashes once mined (anvil mines a block per transaction, the
    last ones a moment after it answered)."""
    d = Deployer(url)
    funder = d.actor("bench-devnet-funder")
    mint(d, manifest.token, funder, DEPOSIT * len(accounts))
    w3 = Web3(HTTPProvider(url))
    usdc = w3.eth.contract(address=to_checksum_address(manifest.token), abi=usdc_artifact().abi)
    hashes = []
    for account in accounts:
        data = usdc.encode_abi("transfer", [to_checksum_address(account), DEPOSIT])
        sent = w3.eth.send_transaction(
            {"from": funder, "to": usdc.address, "data": data, "gas": 100_000}
        )
        hashes.append(sent.to_0x_hex())
    for tx_hash in (hashes[0], hashes[-1]):
        receipt = w3.eth.wait_for_transaction_receipt(
            HexBytes(tx_hash), timeout=120, poll_latency=0.05
        )
        if receipt["status"] != 1:
            raise RuntimeError(f"the deposit {tx_hash} reverted")
    return hashes


async def _activate_all(
    service: Service,
    pairs: Sequence[tuple[str, str, str]],
    token: str,
    concurrency: int,
    protocols: Sequence[str] = (),
) -> Counter[str]:
    """Activates each (account, eoa, tx_hash) on ``protocols`` (every pool by default);
    returns the failures, by error."""
    gate = asyncio.Semaphore(concurrency)
    failures: Counter[str] = Counter()

    async def one(account: str, eoa: str, tx_hash: str) -> None:
        async with gate:
            try:
                await service.activate(account, eoa, token, tx_hash, protocols)
            except Exception as error:  # counted and reported, the others go on
                failures[f"{type(error).__name__}: {str(error)[:120]}"] += 1

    await asyncio.gather(*(one(*pair) for pair in pairs))
    return failures


async def _set_up_directly(
    direct: Service,
    pairs: Sequence[tuple[str, str, str]],
    token: str,
    protocols: Sequence[str] = (),
) -> None:
    """Activates ``pairs`` through ``direct`` (the same database, straight on anvil, which
    mines a block every second meanwhile): the fleet's set-up, not a figure."""
    started = time.perf_counter()
    try:
        failures = await _activate_all(direct, pairs, token, SETUP_CONCURRENCY, protocols)
    finally:
        await direct.close()
        direct.engine.dispose()
    _emit(
        figure="fleet_setup",
        wallets=len(pairs),
        protocols=list(protocols) or "all",
        failed=sum(failures.values()),
        errors=dict(failures),
        seconds=round(time.perf_counter() - started, 1),
        note="activated straight on anvil, 64 at a time; not measured",
    )


async def _finish_activations(service: Service, calls: asyncio.Future[Any]) -> float:
    """What the worker does for background placement while the partner's ``calls`` go on:
    its job (``activation_placement``: passes that finish the open activations while the
    agent's cycle places their funds) every ``ACTIVATION_PASS_SECONDS``, until the calls
    have ended and no wallet is ``activating``. Returns when the last was placed
    (``time.perf_counter``); inline placement has nothing to finish."""
    if service.lifecycle.deposits.placement == ActivationPlacement.INLINE:
        await asyncio.wait([calls])
        return time.perf_counter()
    store = WalletStore(service.engine)
    job = activation_placement(service.agent, service.lifecycle, lambda: False)
    next_pass = time.perf_counter()
    while not calls.done() or any(w.status == "activating" for w in store.wallets(BASE)):
        await asyncio.wait([calls], timeout=max(0.0, next_pass - time.perf_counter()))
        next_pass = time.perf_counter() + ACTIVATION_PASS_SECONDS
        await job()
    await _cycle(service)  # the funds of the last pass's wallets, if it left them
    return time.perf_counter()


async def _cycle(service: Service) -> int:
    return await service.agent.run_cycle()


@dataclass
class Writes:
    """Time spent in the chain's writes during a cycle, and how many moves they made."""

    seconds: float = 0.0
    moves: int = 0


class _OneByOne:
    """The chain as today's path sees it: without ``send_many``, so the books send each
    move with ``supply`` or ``withdraw``, one after another, each awaiting its receipt."""

    def __init__(self, chain: Web3Chain) -> None:
        self._chain = chain

    def __getattr__(self, name: str) -> Any:
        if name == "send_many":
            raise AttributeError(name)
        return getattr(self._chain, name)


@contextmanager
def _timed_writes(service: Service, pipelined: bool) -> Iterator[Writes]:
    """Times the cycle's writes: the batches of ``send_many`` (pipelined), or each
    ``supply`` and ``withdraw`` of today's path (``_OneByOne``)."""
    writes = Writes()
    chain = service.chain

    def timed(call: Callable[..., Awaitable[T]], count: Callable[..., int]) -> Callable[..., Any]:
        async def run(*args: Any, **kwargs: Any) -> T:
            started = time.perf_counter()
            try:
                return await call(*args, **kwargs)
            finally:
                writes.seconds += time.perf_counter() - started
                writes.moves += count(*args, **kwargs)

        return run

    if pipelined:
        chain.send_many = timed(chain.send_many, lambda sends: len(sends))  # type: ignore[method-assign]
    else:
        one_by_one = _OneByOne(chain)
        one_by_one.supply = timed(chain.supply, lambda *_, **__: 1)  # type: ignore[attr-defined]
        one_by_one.withdraw = timed(chain.withdraw, lambda *_, **__: 1)  # type: ignore[attr-defined]
        service.chains[BASE] = cast(Web3Chain, one_by_one)
        assert service.lifecycle.books.chain(BASE) is one_by_one
    try:
        yield writes
    finally:
        service.chains[BASE] = chain
        chain.__dict__.pop("send_many", None)


def _interval_mining(url: str, seconds: float) -> None:
    """anvil mines a block every ``seconds`` (and no longer one per transaction)."""
    rpc(url, "evm_setAutomine", [False])
    rpc(url, "evm_setIntervalMining", [max(int(seconds), 1)])


async def _moving_cycle(
    services: Sequence[Service],
    counter: RpcProxy,
    accounts: Sequence[str],
    path: str,
    pipelined: bool,
) -> dict[str, Any]:
    """One cycle over ``accounts``' wallets, run by ``services`` (replicas) at once."""
    services[0].make_due(accounts)
    before = services[0].run_outcomes()
    failed_before = services[0].failures()
    with contextlib.ExitStack() as stack:
        writes = [stack.enter_context(_timed_writes(s, pipelined)) for s in services]
        ran, counts, seconds = await _counted(
            counter, asyncio.gather(*(_cycle(s) for s in services))
        )
    outcomes = services[0].run_outcomes()
    outcomes.subtract(before)
    failures = services[0].failures()
    failures.subtract(failed_before)
    total = sum(ran)
    moves = sum(w.moves for w in writes)
    figures: dict[str, Any] = {
        "figure": "agent_cycle",
        "cycle": "every wallet moves",
        "path": path,
        "replicas": len(services),
        "wallets": len(accounts),
        "ran": total,
        "outcomes": {k: v for k, v in outcomes.items() if v},
        "failures": {k: v for k, v in failures.items() if v},
        "unmoved": dict(services[0].unmoved(accounts)),
        "seconds": round(seconds, 1),
        "wallets_per_minute": round(total / seconds * 60, 1),
        "moved_wallets_per_minute": round(outcomes["completed"] / seconds * 60, 1),
        "moves": moves,
        "write_seconds": round(max(w.seconds for w in writes), 1),
        "moves_per_minute_of_writes": round(
            moves / max(max(w.seconds for w in writes), 1e-9) * 60, 1
        ),
        "http_requests_per_wallet": round(counts.requests / max(total, 1), 1),
        "eth_calls_per_wallet": round(counts.eth_calls / max(total, 1), 1),
        "transactions": counts.transactions,
        "methods": counts.methods,
    }
    _emit(**{k: v for k, v in figures.items() if k != "figure"}, figure="agent_cycle")
    return figures


async def agent_cycle(
    service: Service,
    counter: RpcProxy,
    url: str,
    manifest: Manifest,
    settings: CycleSettings,
    replica: Callable[[], Service] | None,
    direct: Callable[[], Service],
    worker: Callable[[str], Service],
) -> None:
    """Sets up ``settings.wallets`` activated wallets (anvil mining a block every
    ``settings.block_seconds`` from the activations on; ``worker``: the worker's objects on
    a node URL, finishing background activations meanwhile), then measures the agent's
    cycles over them: a sample that moves nothing, and, after a pool's utilization was
    pushed up, today's path (each move awaiting its receipt) on a few wallets and the
    pipelined path on the rest, each cycle against the same proxy."""
    wallets = settings.wallets
    started = time.perf_counter()
    eoas = [_eoa(str(i)) for i in range(wallets + settings.exit_wallets)]
    every = [service.account(eoa) for eoa in eoas]
    accounts, leaving = every[:wallets], every[wallets:]
    created = time.perf_counter()
    _interval_mining(url, 1)  # the set-up's transactions share blocks
    hashes = _fund_accounts(url, manifest, every)
    funded = time.perf_counter()
    pairs = list(zip(every, eoas, hashes, strict=True))
    measured = min(settings.activations, wallets)
    if measured < wallets:
        await _set_up_directly(direct(), pairs[measured:wallets], manifest.token)
    if leaving:
        _deepen_vault(url, manifest, ROOM_MULTIPLE * DEPOSIT * len(leaving))
        await _set_up_directly(direct(), pairs[wallets:], manifest.token, (MORPHO,))
    service.make_due([])  # the set-up's wallets wait: only the activations' runs are measured
    funded = time.perf_counter()
    _interval_mining(url, settings.block_seconds)
    # The worker's passes run alongside the calls, as its job does, with objects and a
    # node connection of its own (counted apart, through a proxy as far away).
    with proxied(url, round_trip=counter.round_trip) as apart:
        background = worker(apart.url)
        calls = asyncio.ensure_future(
            _counted(
                counter,
                _activate_all(service, pairs[:measured], manifest.token, settings.concurrency),
            )
        )
        try:
            placed, placing, _ = await _counted(apart, _finish_activations(background, calls))
        finally:
            await background.close()
            background.engine.dispose()
        failures, counts, calls_seconds = await calls
    activated = funded + calls_seconds
    wallets = max(measured, 1)  # none measured: the figures below are zeros
    _emit(
        figure="cycle_setup",
        wallets=wallets,
        fleet=len(accounts),
        concurrency=settings.concurrency,
        block_seconds=settings.block_seconds,
        accounts_seconds=round(created - started, 1),
        deposits_seconds=round(funded - created, 1),
        activations_seconds=round(activated - funded, 1),
        activations_failed=sum(failures.values()),
        activation_errors=dict(failures),
        activations_per_minute=round(wallets / (activated - funded) * 60, 1),
        activation_http_requests_per_wallet=round(counts.requests / wallets, 1),
        activation_transactions_per_wallet=round(counts.transactions / wallets, 2),
        placement=service.lifecycle.deposits.placement.value,
        placed_seconds=round(placed - funded, 1),
        placed_per_minute=round(wallets / (placed - funded) * 60, 1),
        placing_http_requests_per_wallet=round(placing.requests / wallets, 1),
        placing_transactions_per_wallet=round(placing.transactions / wallets, 2),
        total_seconds=round(activated - started, 1),
    )
    wallets = len(accounts)
    # What the set-up left idle (the guards' caps cut placements short) is placed first,
    # so that the measured cycle moves nothing: cycle after cycle, as each one's moves
    # change the rates the next one sees, until one moves nothing.
    for _ in range(SETTLING_CYCLES):
        service.make_all_due()
        settled, counts, seconds = await _counted(counter, _cycle(service))
        _emit(
            figure="settling_cycle",
            ran=settled,
            seconds=round(seconds, 1),
            transactions=counts.transactions,
            note="places what the set-up left idle; not a figure",
        )
        if not counts.transactions:
            break
    sample = accounts[: settings.no_move_wallets]
    service.make_due(sample)
    before = service.run_outcomes()
    ran, counts, seconds = await _counted(counter, _cycle(service))
    outcomes = service.run_outcomes()
    outcomes.subtract(before)
    requests, eth_calls = counts.requests / max(ran, 1), counts.eth_calls / max(ran, 1)
    _emit(
        figure="agent_cycle",
        cycle="nothing to move",
        wallets=len(sample),
        ran=ran,
        outcomes={k: v for k, v in outcomes.items() if v},
        seconds=round(seconds, 1),
        wallets_per_minute=round(ran / seconds * 60, 1),
        http_requests_per_wallet=round(requests, 2),
        eth_calls_per_wallet=round(eth_calls, 2),
        methods=counts.methods,
    )
    runs_a_day = 86_400 / DEFAULT_INTERVAL_SECONDS
    _emit(
        figure="node_cost_per_day",
        interval_seconds=DEFAULT_INTERVAL_SECONDS,
        requests_per_wallet=round(requests * runs_a_day, 1),
        eth_calls_per_wallet=round(eth_calls * runs_a_day, 1),
        requests_100k_wallets=round(requests * runs_a_day * 100_000),
        eth_calls_100k_wallets=round(eth_calls * runs_a_day * 100_000),
        note="runs that move nothing, one per wallet per interval",
    )
    if not settings.moving:
        return
    held: Counter[str] = Counter()
    for account in accounts[:: max(1, wallets // 50)]:  # a sample of the wallets
        held.update(await _positions(service.chain, account))
    least = min((p.name for p in manifest.protocols), key=lambda name: held[name])
    # The settling cycles moved some wallets minutes ago: within the guards' minimum wait
    # after a move (6 h) a wallet makes no move for yield, and the cycle below is one in
    # which every wallet moves for yield. The set-up is taken to be a day old.
    service.age_moves(SET_UP_AGE_SECONDS)
    _push(url, manifest, least, arriving=DEPOSIT * len(accounts))
    serial = accounts[: settings.serial_wallets]
    rest = accounts[settings.serial_wallets :]
    await _moving_cycle([service], counter, serial, "one by one", pipelined=False)
    if replica is None:
        await _moving_cycle([service], counter, rest, "pipelined", pipelined=True)
        await _fleet_exit(service, counter, manifest, url, [*accounts, *leaving])
        return
    # On PostgreSQL: the rest in two halves, one for one replica and one for two, with
    # batches of a quarter so that two replicas share a half's wallets.
    half = len(rest) // 2
    batch = max(half // 2, 1)
    one = service.with_batch(batch)
    await _moving_cycle([one], counter, rest[:half], "pipelined", pipelined=True)
    second = replica()
    try:
        both = [one, second.with_batch(batch)]
        await _moving_cycle(both, counter, rest[half:], "pipelined", pipelined=True)
    finally:
        await second.close()
        second.engine.dispose()
    await _fleet_exit(service, counter, manifest, url, [*accounts, *leaving])


def _holding(service: Service, protocol: str) -> list[str]:
    """The wallets whose books hold funds in ``protocol``."""
    store = WalletStore(service.engine)
    return [w.address for w in store.wallets(BASE) if w.positions.get(protocol, 0) > 0]


async def _fleet_exit(
    service: Service, counter: RpcProxy, manifest: Manifest, url: str, accounts: Sequence[str]
) -> None:
    """The Morpho vault's collateral feed falls to 0.90: the depeg guard trips and every
    wallet in the vault must leave it. No wallet is due: the worker's watch of the guards
    (``Agent.watch_exits``) reads the fallen feed and makes the vault's wallets due, and a
    cycle runs; while wallets are left (their exit failed), the worker's next watch,
    ``YIELDAGENT_GUARD_WATCH_SECONDS`` after the one before, makes them due again and
    another cycle runs. The figure is the time from the fall's block to the last exit, and
    the node's requests meanwhile; the first watch reads at once here (in the worker, up to
    a watch's period later). Then the chain is read to check the books."""
    holding = _holding(service, MORPHO)
    if not holding:
        _emit(figure="fleet_exit", wallets=0, note="no wallet holds the vault")
        return
    [(_, listed)] = manifest.collateral_feeds.items()
    service.make_due([])
    before = counter.snapshot()
    actions.set_feed_price(url, listed["feed"], "0.90")
    started = time.perf_counter()  # the fall is mined: the guard trips on this block
    hastened = await service.agent.watch_exits()
    watched = time.perf_counter()
    cycles = 0
    checking = 0.0  # the bench's own reads of the books between cycles, not the service's
    next_watch = started + WATCH_SECONDS
    while time.perf_counter() - started < EXIT_PATIENCE_SECONDS:
        await _cycle(service)
        cycles += 1
        checked = time.perf_counter()
        held = _holding(service, MORPHO)
        checking += time.perf_counter() - checked
        if not held:
            break
        # What is left failed to leave: the worker's next watch makes it due again.
        await asyncio.sleep(max(next_watch - time.perf_counter(), 0.0))
        next_watch = time.perf_counter() + WATCH_SECONDS
        if not await service.agent.watch_exits():
            break
    seconds = time.perf_counter() - started - checking
    counts = counter.snapshot().minus(before)
    left = _holding(service, MORPHO)
    on_chain = 0
    for account in holding:
        on_chain += (await _positions(service.chain, account)).get(MORPHO, 0) > 0
    _emit(
        figure="fleet_exit",
        wallets=len(holding),
        fleet=len(accounts),
        made_due=hastened,
        watch_seconds=round(watched - started, 2),
        cycles=cycles,
        seconds=round(seconds, 1),
        left_in_books=len(left),
        left_on_chain=on_chain,
        http_requests_per_wallet=round(counts.requests / len(holding), 1),
        transactions=counts.transactions,
        methods=counts.methods,
    )


# -- the whole benchmark -----------------------------------------------------------------


@dataclass(frozen=True)
class CycleSettings:
    """The cycle figure's sizes, from ``BENCH_DEVNET_*``."""

    wallets: int = 200
    concurrency: int = 8
    block_seconds: float = 2.0
    no_move_wallets: int = 50
    serial_wallets: int = 20
    moving: bool = True
    exit_wallets: int = 0
    """Wallets on the Morpho vault alone, set up straight on anvil, for the fleet exit."""
    activations: int = 200
    """How many of the wallets are activated through the proxy at ``block_seconds``
    (the activation figure); the others are set up before, straight on anvil."""

    @classmethod
    def from_env(cls) -> CycleSettings:
        env = os.environ
        wallets = int(env.get("BENCH_DEVNET_WALLETS", "200"))
        return cls(
            wallets=wallets,
            concurrency=int(env.get("BENCH_DEVNET_CONCURRENCY", "8")),
            block_seconds=float(env.get("BENCH_DEVNET_BLOCK_SECONDS", "2")),
            no_move_wallets=min(int(env.get("BENCH_DEVNET_NO_MOVE_WALLETS", "50")), wallets),
            serial_wallets=min(int(env.get("BENCH_DEVNET_SERIAL_WALLETS", "20")), wallets // 2),
            moving=env.get("BENCH_DEVNET_MOVING", "1") != "0",
            activations=int(env.get("BENCH_DEVNET_ACTIVATIONS", "200")),
            exit_wallets=int(env.get("BENCH_DEVNET_EXIT_WALLETS", "0")),
        )


def _round_trip() -> float:
    """The proxy's round trip in seconds (``BENCH_DEVNET_ROUND_TRIP_MS``, or
    ``BENCH_DEVNET_RTT_MS``)."""
    said = os.environ.get("BENCH_DEVNET_ROUND_TRIP_MS") or os.environ.get("BENCH_DEVNET_RTT_MS")
    return float(said or "50") / 1000


def _on_devnet(work: Callable[[str, Manifest, Path, RpcProxy], None]) -> None:
    """Runs ``work`` on a fresh devnet with its own temporary directory and counting proxy."""
    with tempfile.TemporaryDirectory() as directory, Anvil.start(free_port()) as anvil:
        started = time.perf_counter()
        manifest_path = Path(directory) / "deployment.json"
        operator = Account.from_key(OPERATOR_KEY).address
        manifest = deploy_all(anvil.url, manifest_path=manifest_path, operator=operator)
        Deployer(anvil.url).fund(Account.from_key(OPERATOR_KEY).address, 10**24)
        _emit(figure="devnet_deploy_seconds", value=round(time.perf_counter() - started, 1))
        counter = RpcProxy(anvil.url, round_trip=_round_trip()).start()
        _emit(figure="node_round_trip_ms", value=round(counter.round_trip * 1000, 1))
        try:
            work(anvil.url, manifest, manifest_path, counter)
        finally:
            counter.stop()


def main() -> None:
    """Runs figures 1 and 2 on one fresh devnet, and the cycle on another (on PostgreSQL,
    with a second replica's figure, when ``YIELDAGENT_TEST_DATABASE_URL`` is set)."""
    settings = CycleSettings.from_env()
    postgres = os.environ.get("YIELDAGENT_TEST_DATABASE_URL")

    def small_figures(url: str, manifest: Manifest, path: Path, counter: RpcProxy) -> None:
        service = Service.build(counter.url, path, manifest, path.parent / "data")

        async def measure() -> None:
            await quote_reads(service, counter, url)
            await run_chain_calls(service, counter, url, manifest)
            await service.close()

        asyncio.run(measure())
        service.engine.dispose()

    def cycle(url: str, manifest: Manifest, path: Path, counter: RpcProxy) -> None:
        database = _postgres_schema(postgres) if postgres else None
        data = path.parent / "data"
        placement = os.environ.get("YIELDAGENT_ACTIVATION_PLACEMENT", "inline")
        service = Service.build(counter.url, path, manifest, data, database, placement=placement)

        def replica() -> Service:
            return Service.build(
                counter.url, path, manifest, path.parent / "replica", database, service.partner_id
            )

        def direct() -> Service:
            return Service.build(
                url,
                path,
                manifest,
                path.parent / "direct",
                database or f"sqlite:///{data / 'bench.db'}",
                service.partner_id,
            )

        def worker(rpc_url: str) -> Service:
            return Service.build(
                rpc_url,
                path,
                manifest,
                path.parent / "worker",
                database or f"sqlite:///{data / 'bench.db'}",
                service.partner_id,
                placement,
            )

        async def measure() -> None:
            await agent_cycle(
                service,
                counter,
                url,
                manifest,
                settings,
                replica if database else None,
                direct,
                worker,
            )
            await service.close()

        asyncio.run(measure())
        service.engine.dispose()

    # Two devnets rather than one reverted with evm_revert: after a revert, anvil answered
    # some reads at the re-mined block numbers with an arithmetic panic in Comet's accrual.
    if os.environ.get("BENCH_DEVNET_CYCLE_ONLY") != "1":
        _on_devnet(small_figures)
    _on_devnet(cycle)


def _postgres_schema(base: str) -> str:
    """A fresh schema ``bench_devnet`` on ``base``; the URL that uses it."""
    engine = create_db_engine(base)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA IF EXISTS bench_devnet CASCADE"))
        connection.execute(text("CREATE SCHEMA bench_devnet"))
    engine.dispose()
    separator = "&" if "?" in base else "?"
    return f"{base}{separator}options=-csearch_path%3Dbench_devnet"


if __name__ == "__main__":
    main()
