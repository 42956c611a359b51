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
3. ``agent_cycle``: ``BENCH_DEVNET_WALLETS`` (default 1000) smart accounts, each created
   in the smart-account store as the servicer does, funded by an ERC-20 transfer (one mint
   to a funder, then one transfer per account) and activated through the lifecycle
   (``BENCH_DEVNET_CONCURRENCY`` at a time, default 4, as concurrent API calls would);
   then a cycle with every wallet due, which moves nothing, and (unless
   ``BENCH_DEVNET_MOVING=0``) one after a pool's utilization was pushed up, which moves
   funds. Figure 3 has a devnet of its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from eth_account import Account
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from hexbytes import HexBytes
from sqlalchemy import Engine, text
from web3 import HTTPProvider, Web3

from benchmarks.rpc_proxy import RpcCounts, RpcProxy
from yieldagent.catalog import load_catalog
from yieldagent.chain.operator import load_operator_wallet
from yieldagent.chain.web3.adapter import Web3Chain
from yieldagent.composition.chains import (
    build_chains,
    safe_chains,
    served_catalog,
    simulated_market,
)
from yieldagent.composition.compose import build_agent, build_lifecycle
from yieldagent.composition.deployments import Manifest
from yieldagent.config import load_settings
from yieldagent.devnet import actions
from yieldagent.devnet.aave import borrow_to_utilization_aave
from yieldagent.devnet.anvil import Anvil, free_port, rpc
from yieldagent.devnet.borrowing import borrow_to_utilization
from yieldagent.devnet.deploy import deploy_all
from yieldagent.devnet.deployer import Deployer
from yieldagent.devnet.usdc import mint, usdc_artifact
from yieldagent.domain.agent.runs import Agent
from yieldagent.domain.constraints import Constraints
from yieldagent.domain.money.deposits import ActivationRequest
from yieldagent.domain.money.lifecycle import Lifecycle
from yieldagent.domain.partners.partners import PERMISSIONS
from yieldagent.domain.partners.smart_accounts import (
    DEFAULT_AGENT_ID,
    AccountKey,
    SafeChains,
    open_account,
)
from yieldagent.domain.ports.accounts import Provider
from yieldagent.storage.db import create_db_engine, migrate
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.smart_accounts import SmartAccountStore

BASE = 8453
OPERATOR_KEY = "0x" + "3c" * 32
USDC_UNIT = 10**6
DEPOSIT = 1_000 * USDC_UNIT
AAVE, MORPHO = "aave", "morpho_gauntlet_usdc_prime"
PUSHED_UTILIZATION = {AAVE: 0.97}
"""How high a pool is pushed to draw funds (0.99 for the pools not named here)."""
NEVER_AGAIN = 1e9
"""The agent's interval: longer than any cycle, so that each wallet runs once per cycle."""

T = TypeVar("T")


def _emit(**figures: object) -> None:
    print(json.dumps({"benchmark": "devnet", **figures}), flush=True)


@dataclass
class Service:
    """The service's domain objects on one database, its chain port behind the proxy."""

    engine: Engine
    chain: Web3Chain
    lifecycle: Lifecycle
    agent: Agent
    partner_id: int
    safes: SafeChains

    @classmethod
    def build(cls, rpc_url: str, manifest_path: Path, manifest: Manifest, data: Path) -> Service:
        """Builds the objects as ``app.Service.start`` does, from the service's settings."""
        settings = load_settings(
            {
                "YIELDAGENT_DATA_DIR": str(data),
                "YIELDAGENT_DATABASE_URL": f"sqlite:///{data / 'bench.db'}",
                "YIELDAGENT_ENV": "devnet",
                "YIELDAGENT_RPC_URL_8453": rpc_url,
                "YIELDAGENT_DEPLOYMENT_8453": str(manifest_path),
                "YIELDAGENT_OPERATOR_PRIVATE_KEY": OPERATOR_KEY,
                "YIELDAGENT_FEE_COLLECTOR": manifest.extras["fee_collector"],
                "YIELDAGENT_AGENT_INTERVAL_SECONDS": str(NEVER_AGAIN),
            }
        )
        data.mkdir(parents=True, exist_ok=True)
        engine = create_db_engine(settings.database_url)
        migrate(engine)
        operator = load_operator_wallet(settings)
        catalog = served_catalog(settings, load_catalog())
        market = simulated_market(settings, engine, catalog)
        chains = build_chains(settings, engine, market, catalog, operator)
        chain = chains[BASE]
        assert isinstance(chain, Web3Chain)
        lifecycle = build_lifecycle(settings, engine, chains, catalog, operator.address)
        agent = build_agent(settings, engine, lifecycle)
        partner, _ = PartnerStore(engine).create("bench-devnet", PERMISSIONS)
        safes = safe_chains(settings, catalog, operator.address)
        return cls(engine, chain, lifecycle, agent, partner.id, safes)

    def account(self, eoa: str) -> str:
        """The Safe account of ``eoa``, recorded as ``CreateSafeAccount`` records it."""
        key = AccountKey(BASE, to_checksum_address(eoa), DEFAULT_AGENT_ID)
        store = SmartAccountStore(self.engine)
        return open_account(store, key, self.partner_id, Provider.SAFE, self.safes).address

    async def activate(self, account: str, eoa: str, token: str, tx_hash: str) -> None:
        """Activates ``account`` on every pool, as ``ActivateWallet`` does."""
        request = ActivationRequest(
            wallet=account,
            eoa=to_checksum_address(eoa),
            token=token,
            protocols=tuple(p.name for p in self.chain.config.protocols),
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

    async def close(self) -> None:
        """Closes the chain port's HTTP session (it belongs to the running event loop)."""
        await self.chain.w3.provider.disconnect()

    def make_all_due(self) -> None:
        """Every wallet's next run: now."""
        with self.engine.begin() as connection:
            connection.execute(text("UPDATE wallet_schedule SET next_run_at = 0"))


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


def _push(url: str, manifest: Manifest, protocol: str) -> None:
    """Raises ``protocol``'s utilization, so that its rate draws funds."""
    d = Deployer(url)
    deployment = manifest.protocol(protocol)
    utilization = PUSHED_UTILIZATION.get(protocol, 0.99)
    if deployment.kind == "aave_v3":
        borrow_to_utilization_aave(d, deployment, manifest.token, utilization)
    else:
        borrow_to_utilization(d, deployment, manifest.token, utilization)


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
    _push(url, manifest, other)
    outcome, counts, seconds = await _counted(counter, service.agent.run(BASE, account))
    moved = await _positions(service.chain, account)
    _emit(
        figure="run_chain_calls",
        status=outcome.status,
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
    service: Service, pairs: list[tuple[str, str, str]], token: str, concurrency: int
) -> Counter[str]:
    """Activates each (account, eoa, tx_hash); returns the failures, by error."""
    gate = asyncio.Semaphore(concurrency)
    failures: Counter[str] = Counter()

    async def one(account: str, eoa: str, tx_hash: str) -> None:
        async with gate:
            try:
                await service.activate(account, eoa, token, tx_hash)
            except Exception as error:  # counted and reported, the others go on
                failures[f"{type(error).__name__}: {str(error)[:120]}"] += 1

    await asyncio.gather(*(one(*pair) for pair in pairs))
    return failures


async def _cycle(service: Service) -> int:
    return await service.agent.run_cycle()


async def agent_cycle(
    service: Service,
    counter: RpcProxy,
    url: str,
    manifest: Manifest,
    wallets: int,
    concurrency: int,
    moving: bool,
) -> None:
    """Sets up ``wallets`` activated wallets, then times the agent's cycles over them."""
    started = time.perf_counter()
    eoas = [_eoa(str(i)) for i in range(wallets)]
    accounts = [service.account(eoa) for eoa in eoas]
    created = time.perf_counter()
    hashes = _fund_accounts(url, manifest, accounts)
    funded = time.perf_counter()
    pairs = list(zip(accounts, eoas, hashes, strict=True))
    failures, counts, _ = await _counted(
        counter, _activate_all(service, pairs, manifest.token, concurrency)
    )
    activated = time.perf_counter()
    _emit(
        figure="cycle_setup",
        wallets=wallets,
        concurrency=concurrency,
        accounts_seconds=round(created - started, 1),
        deposits_seconds=round(funded - created, 1),
        activations_seconds=round(activated - funded, 1),
        activations_failed=sum(failures.values()),
        activation_errors=dict(failures),
        activations_per_minute=round(wallets / (activated - funded) * 60, 1),
        activation_http_requests_per_wallet=round(counts.requests / wallets, 1),
        activation_transactions_per_wallet=round(counts.transactions / wallets, 2),
        total_seconds=round(activated - started, 1),
    )
    cycles: list[tuple[str, str | None]] = [("nothing to move", None)]
    if moving:
        held: Counter[str] = Counter()
        for account in accounts[:: max(1, wallets // 50)]:  # a sample of the wallets
            held.update(await _positions(service.chain, account))
        least = min((p.name for p in manifest.protocols), key=lambda name: held[name])
        cycles.append((f"moves funds ({least} pushed up)", least))
    for label, push in cycles:
        if push is not None:
            _push(url, manifest, push)
        service.make_all_due()
        before = service.run_outcomes()
        ran, counts, seconds = await _counted(counter, _cycle(service))
        outcomes = service.run_outcomes()
        outcomes.subtract(before)
        _emit(
            figure="agent_cycle",
            cycle=label,
            wallets=wallets,
            ran=ran,
            outcomes={k: v for k, v in outcomes.items() if v},
            seconds=round(seconds, 1),
            wallets_per_minute=round(ran / seconds * 60, 1),
            http_requests_per_wallet=round(counts.requests / max(ran, 1), 1),
            eth_calls_per_wallet=round(counts.eth_calls / max(ran, 1), 1),
            transactions=counts.transactions,
            methods=counts.methods,
        )


# -- the whole benchmark -----------------------------------------------------------------


def _round_trip() -> float:
    """The proxy's round trip in seconds (``BENCH_DEVNET_ROUND_TRIP_MS``)."""
    return float(os.environ.get("BENCH_DEVNET_ROUND_TRIP_MS", "50")) / 1000


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
    """Runs figures 1 and 2 on one fresh devnet, and the cycle on another."""
    wallets = int(os.environ.get("BENCH_DEVNET_WALLETS", "1000"))
    concurrency = int(os.environ.get("BENCH_DEVNET_CONCURRENCY", "4"))
    moving = os.environ.get("BENCH_DEVNET_MOVING", "1") != "0"

    def small_figures(url: str, manifest: Manifest, path: Path, counter: RpcProxy) -> None:
        service = Service.build(counter.url, path, manifest, path.parent / "data")

        async def measure() -> None:
            await quote_reads(service, counter, url)
            await run_chain_calls(service, counter, url, manifest)
            await service.close()

        asyncio.run(measure())
        service.engine.dispose()

    def cycle(url: str, manifest: Manifest, path: Path, counter: RpcProxy) -> None:
        service = Service.build(counter.url, path, manifest, path.parent / "data")

        async def measure() -> None:
            await agent_cycle(service, counter, url, manifest, wallets, concurrency, moving)
            await service.close()

        asyncio.run(measure())
        service.engine.dispose()

    # Two devnets rather than one reverted with evm_revert: after a revert, anvil answered
    # some reads at the re-mined block numbers with an arithmetic panic in Comet's accrual.
    _on_devnet(small_figures)
    _on_devnet(cycle)


if __name__ == "__main__":
    main()
