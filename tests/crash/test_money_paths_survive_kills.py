"""Every money path survives SIGKILL: after a restart the books agree with the chain, no
money moved twice, no wallet is stuck and no operation is left open.

The paths: activation, top-up, withdrawal, deactivation (with and without the transfer to
the EOA), and reward claims (staked and not). Agent runs have their own crash test
(``tests/agent/test_crash_safety.py``).

For each path the service runs as ``yieldagent serve`` in a process of its own
(``support.crash_world``), on SQLite and on PostgreSQL. Each round prepares the chain
for one partner call, sends it over gRPC under an idempotency key, and SIGKILLs the
service at a moment drawn from a seeded ``random.Random``:

- *before the call*: the service is idle (its worker may be mid-tick);
- *as the call arrives*: a few milliseconds after it was sent;
- *intent stored*: once the call's operation is in the ``operations`` table;
- *steps*: once the operation's steps have filled in up to a point;
- *answered*: after the service answered.

It then starts the service again and, now and then, kills it once more while it
finishes what the first kill left (*recovery*). Every idempotency key left in progress
is let lapse at once, as it would 20 s later (the key lease is fixed). Two times in
three the dead process's wallet leases are let lapse at once too (as ``LEASE_SECONDS``
later); otherwise the retry and the worker wait for them. The retry with the same key is
sent at once, or after the worker's reconciliation closed the operation. It must
succeed and, when the killed call had answered, answer the same. Then, once nothing is
left open and no agent run is due or under way:

- the call's operation is completed;
- the chain shows exactly the moves the call should make: one payout to the EOA and at
  most one fee for a withdrawal or a deactivation with transfer; one claim and one swap
  (staked) or one send to the EOA (not staked) for a claim; no transfer out for the
  others;
- the books of every wallet balance against the chain, to the unit
  (``support.books.book_disagreements``);
- no wallet is ``activating``, ``running`` or ``deactivating`` (no pool here is short of
  cash, so none may wait), and no operation is open.

``YIELDAGENT_CRASH_KILLS`` sets how many kills each path gets per backend (3 by default,
20 under ``make crash``); ``YIELDAGENT_CRASH_SEED`` the seed. Each test prints its seed
and every kill: the moment drawn and what it interrupted. What a kill interrupts depends
on timing, so a seed replays the same moments, not always the same interruptions.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from sqlalchemy import Engine
from sqlmodel import Session, select

from support.agent_world import expire_leases, user_eoa
from support.books import book_disagreements
from support.crash_world import (
    CrashWorld,
    ServeProcess,
    Servers,
    due_wallets,
    expire_idempotency_leases,
    open_crash_world,
    open_operations,
    operation_row,
    serve_env,
    unsettled_wallets,
    wait_until,
)
from support.service import free_port
from support.wallet_setup import (
    BASE,
    BASE_USDC,
    DAY,
    FEE,
    PROTOCOLS,
    USDC,
    activated,
    fund,
    make_lifecycle,
    top_up_deposit,
)
from yieldagent.catalog import load_catalog
from yieldagent.chain.simulated.genesis import REWARD_TOKENS
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.composition.chains import simulated_chains
from yieldagent.domain.books.operations import OPEN, OperationKind, OperationStatus, scoped
from yieldagent.domain.books.wallet_states import WalletStatus
from yieldagent.domain.books.wallets import Wallet
from yieldagent.simulated_world.state import MinedTx
from yieldagent.storage.runs import RunStore
from yieldagent.storage.tables import IdempotencyKeyRow, OperationRow
from yieldagent.storage.wallets import WalletStore
from yieldagent.v1 import rewards_pb2, rewards_pb2_grpc, wallets_pb2, wallets_pb2_grpc

KILLS = int(os.environ.get("YIELDAGENT_CRASH_KILLS", "3"))
"""SIGKILLs per path and backend."""
SEED = int(os.environ.get("YIELDAGENT_CRASH_SEED", "20260110"))

pytestmark = [pytest.mark.crash, pytest.mark.timeout(120 + 30 * KILLS)]

WELL = REWARD_TOKENS[(BASE, "WELL")].address
MOMENTS = (
    "before the call",
    "as the call arrives",
    "intent stored",
    "steps",
    "steps",
    "steps",
    "answered",
)
RECOVERY_KILLS = 0.35
"""How often a kill that left an operation open is followed by a second kill while the
restarted service finishes it."""
LAPSE_AT_ONCE = 2 / 3
"""How often the dead process's wallet leases are let lapse at once (as they would
``LEASE_SECONDS`` later) rather than waited for."""
CALL_SECONDS = 90.0
QUIET_SECONDS = 60.0
QUIET_RECHECK_SECONDS = 0.6
"""Longer than the served worker's tick (0.5 s): a run due at the first look has started
by the second."""
"""At most how long reconciliation may take to close what a kill left (a lease of two
seconds, and a tick every second)."""


# -- calls ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Call:
    """One partner call of a money path."""

    kind: str
    """The kind of operation it starts (its idempotency key is scoped by it)."""
    method: str
    """Service/Method."""
    request: Message
    address: str
    """The smart account it acts on."""
    eoa: str
    amount: int = 0
    """What a withdrawal asks for."""


_STUBS: dict[str, Any] = {
    "WalletService": wallets_pb2_grpc.WalletServiceStub,
    "RewardService": rewards_pb2_grpc.RewardServiceStub,
}


def send(channel: grpc.Channel, call: Call, metadata: Sequence[tuple[str, str]]) -> Any:
    """Sends ``call``; returns its future."""
    service, name = call.method.split("/")
    method = getattr(_STUBS[service](channel), name)
    return method.future(call.request, metadata=tuple(metadata), timeout=CALL_SECONDS)


@dataclass(frozen=True, slots=True)
class Moves:
    """What the chain shows leaving (or reaching) one smart account, by kind."""

    payouts: tuple[MinedTx, ...]
    """Transfers of the wallet's token to the EOA."""
    fees: tuple[MinedTx, ...]
    """Transfers of the wallet's token to the fee collector."""
    others: tuple[MinedTx, ...]
    """Transfers of the wallet's token to anyone else."""
    claims: tuple[MinedTx, ...]
    swaps: tuple[MinedTx, ...]
    sends: tuple[MinedTx, ...]
    """Reward tokens sent to the EOA."""

    def since(self, before: Moves) -> Moves:
        """What was added after ``before``."""

        def new(now: tuple[MinedTx, ...], then: tuple[MinedTx, ...]) -> tuple[MinedTx, ...]:
            seen = {tx.tx_hash for tx in then}
            return tuple(tx for tx in now if tx.tx_hash not in seen)

        return Moves(
            new(self.payouts, before.payouts),
            new(self.fees, before.fees),
            new(self.others, before.others),
            new(self.claims, before.claims),
            new(self.swaps, before.swaps),
            new(self.sends, before.sends),
        )

    def count(self) -> dict[str, int]:
        """How many of each."""
        return {
            "payouts": len(self.payouts),
            "fees": len(self.fees),
            "others": len(self.others),
            "claims": len(self.claims),
            "swaps": len(self.swaps),
            "sends": len(self.sends),
        }


def moves(market: SimulatedMarket, address: str, eoa: str) -> Moves:
    """The chain's moves of the smart account at ``address`` (whose owner is ``eoa``)."""
    rows = market.history(BASE, address, 0)
    out = [
        r
        for r in rows
        if r.kind == "transfer" and r.token == BASE_USDC and r.sender == address != r.recipient
    ]
    return Moves(
        payouts=tuple(r for r in out if r.recipient == eoa),
        fees=tuple(r for r in out if r.recipient == FEE),
        others=tuple(r for r in out if r.recipient not in (eoa, FEE)),
        claims=tuple(r for r in rows if r.kind == "claim" and r.recipient == address),
        swaps=tuple(r for r in rows if r.kind == "swap" and r.sender == address),
        sends=tuple(
            r
            for r in rows
            if r.kind == "transfer"
            and r.token == WELL
            and r.sender == address
            and r.recipient == eoa
        ),
    )


def _expect(added: Moves, **expected: int) -> list[str]:
    """A problem unless the chain's moves ``added`` are exactly ``expected`` (others: 0)."""
    counts = added.count()
    wanted = {kind: expected.get(kind, 0) for kind in counts}
    return [] if counts == wanted else [f"the chain shows {counts}, expected {wanted}"]


# -- the money paths ------------------------------------------------------------------------


def _stored(world: CrashWorld, address: str) -> Wallet:
    wallet = WalletStore(world.engine).get(BASE, address)
    assert wallet is not None, f"no wallet stored at {address}"
    return wallet


async def _activate(world: CrashWorld, amount: int, eoa: str, **kwargs: Any) -> Wallet:
    """A wallet activated in this process, whose agent will not run during the test."""
    lifecycle = make_lifecycle(world.engine, simulated_chains(world.market, load_catalog()))
    wallet = await activated(
        lifecycle, world.engine, world.market, world.partner_id, amount, eoa, **kwargs
    )
    RunStore(world.engine).schedule(wallet.id, time.time() + 10 * DAY)
    return wallet


class MoneyPath:
    """One money path: what it prepares, the call it makes, what the chain must show."""

    name = ""
    steps = 2
    """About how many chain calls its operation makes (where a *steps* kill may land)."""

    async def setup(self, world: CrashWorld, rounds: int) -> None:
        """Prepares wallets for at most ``rounds`` rounds, before the service starts."""

    def account(self, index: int) -> tuple[str, str]:
        """The smart account and the EOA of the ``index``-th call."""
        raise NotImplementedError

    def call(self, world: CrashWorld, index: int, rng: random.Random) -> Call:
        """Prepares the chain for the ``index``-th call, and returns it."""
        raise NotImplementedError

    def check(self, world: CrashWorld, call: Call, added: Moves, answer: Any) -> list[str]:
        """What is wrong with the call's ``answer`` and the chain's moves it ``added``."""
        raise NotImplementedError


class OneWallet(MoneyPath):
    """A path whose calls all act on one activated wallet."""

    def __init__(self) -> None:
        self.wallet: Wallet | None = None

    def account(self, index: int) -> tuple[str, str]:
        assert self.wallet is not None
        return self.wallet.address, self.wallet.eoa


class Activation(MoneyPath):
    """First activations, each of its own funded smart account."""

    name = "activation"
    steps = 2

    def __init__(self) -> None:
        self.accounts: list[tuple[str, str, str]] = []

    async def setup(self, world: CrashWorld, rounds: int) -> None:
        rng = random.Random(SEED)
        for index in range(rounds):
            eoa = user_eoa(index)
            amount = rng.randrange(5, 300) * 1000 * USDC
            funded = fund(world.engine, world.market, world.partner_id, amount, eoa)
            self.accounts.append((funded.address, eoa, funded.tx_hash))

    def account(self, index: int) -> tuple[str, str]:
        address, eoa, _ = self.accounts[index]
        return address, eoa

    def call(self, world: CrashWorld, index: int, rng: random.Random) -> Call:
        address, eoa, tx_hash = self.accounts[index]
        request = wallets_pb2.ActivateWalletRequest(
            chain_id=BASE,
            wallet=address,
            eoa=eoa,
            initial_token=BASE_USDC,
            selected_protocols=PROTOCOLS,
            tx_hash=tx_hash,
        )
        return Call(OperationKind.ACTIVATE, "WalletService/ActivateWallet", request, address, eoa)

    def check(self, world: CrashWorld, call: Call, added: Moves, answer: Any) -> list[str]:
        problems = _expect(added)
        wallet = _stored(world, call.address)
        if wallet.status != WalletStatus.ACTIVATED:
            problems.append(f"the wallet is {wallet.status}, not activated")
        if answer.wallet != call.address:
            problems.append(f"the answer names {answer.wallet}")
        return problems


class TopUp(OneWallet):
    """Top-ups of one wallet, each with a new deposit."""

    name = "top-up"
    steps = 2

    async def setup(self, world: CrashWorld, rounds: int) -> None:
        self.wallet = await _activate(world, 20_000 * USDC, user_eoa(0))

    def call(self, world: CrashWorld, index: int, rng: random.Random) -> Call:
        address, eoa = self.account(index)
        amount = rng.randrange(1, 50) * 1000 * USDC
        tx_hash = top_up_deposit(world.market, address, amount, eoa)
        request = wallets_pb2.TopUpRequest(chain_id=BASE, wallet=address, tx_hash=tx_hash)
        return Call(OperationKind.TOP_UP, "WalletService/TopUp", request, address, eoa)

    def check(self, world: CrashWorld, call: Call, added: Moves, answer: Any) -> list[str]:
        problems = _expect(added)
        wallet = _stored(world, call.address)
        if wallet.status != WalletStatus.ACTIVATED:
            problems.append(f"the wallet is {wallet.status}, not activated")
        return problems


class Withdrawal(OneWallet):
    """Partial withdrawals from one wallet that earned yield (so each pays a fee)."""

    name = "withdrawal"
    steps = 3

    async def setup(self, world: CrashWorld, rounds: int) -> None:
        self.wallet = await _activate(world, 600_000 * USDC, user_eoa(0))
        world.market.advance(30 * DAY)

    def call(self, world: CrashWorld, index: int, rng: random.Random) -> Call:
        address, eoa = self.account(index)
        amount = rng.randrange(1_000, 20_000) * USDC + rng.randrange(USDC)
        request = wallets_pb2.WithdrawRequest(chain_id=BASE, wallet=address, amount=str(amount))
        return Call(OperationKind.WITHDRAW, "WalletService/Withdraw", request, address, eoa, amount)

    def check(self, world: CrashWorld, call: Call, added: Moves, answer: Any) -> list[str]:
        (detail,) = answer.withdraw_details
        fee = int(detail.fee_amount)
        problems = _expect(added, payouts=1, fees=1 if fee else 0)
        if int(detail.amount) != call.amount:
            problems.append(f"withdrew {detail.amount}, asked {call.amount}")
        paid = [(p.tx_hash, p.amount) for p in added.payouts]
        if paid != [(detail.tx_hash, call.amount - fee)]:
            problems.append(f"answered {detail.tx_hash} paying {call.amount - fee}, paid {paid}")
        if sum(f.amount for f in added.fees) != fee:
            problems.append(f"fees sent {[f.amount for f in added.fees]}, answered {fee}")
        if _stored(world, call.address).status != WalletStatus.ACTIVATED:
            problems.append("the wallet is no longer activated")
        return problems


class Deactivation(MoneyPath):
    """Deactivations, each of its own wallet that earned yield."""

    steps = 4

    def __init__(self, transfer: bool) -> None:
        self.transfer = transfer
        self.name = f"deactivation transfer={str(transfer).lower()}"
        self.wallets: list[Wallet] = []

    async def setup(self, world: CrashWorld, rounds: int) -> None:
        rng = random.Random(SEED)
        for index in range(rounds):
            amount = rng.randrange(5, 300) * 1000 * USDC
            self.wallets.append(await _activate(world, amount, user_eoa(index)))
        world.market.advance(10 * DAY)

    def account(self, index: int) -> tuple[str, str]:
        wallet = self.wallets[index]
        return wallet.address, wallet.eoa

    def call(self, world: CrashWorld, index: int, rng: random.Random) -> Call:
        address, eoa = self.account(index)
        request = wallets_pb2.DeactivateWalletRequest(
            chain_id=BASE, wallet=address, transfer=self.transfer
        )
        return Call(
            OperationKind.DEACTIVATE, "WalletService/DeactivateWallet", request, address, eoa
        )

    def check(self, world: CrashWorld, call: Call, added: Moves, answer: Any) -> list[str]:
        wallet = _stored(world, call.address)
        withdrawals = WalletStore(world.engine).withdrawals(wallet.id)
        if self.transfer:
            fees = [w.fee for w in withdrawals]
            problems = _expect(added, payouts=1, fees=1 if any(fees) else 0)
            if len(withdrawals) != 1:
                problems.append(f"{len(withdrawals)} withdrawals booked, fees {fees}")
        else:
            problems = _expect(added)
            if withdrawals:
                problems.append(f"withdrawals booked: {withdrawals}")
        if wallet.status != WalletStatus.DEACTIVATED:
            problems.append(f"the wallet is {wallet.status} ({wallet.status_reason!r})")
        held = dict(world.market.positions(BASE, BASE_USDC, call.address))
        if held:
            problems.append(f"positions left: {held}")
        idle = world.market.balance(BASE, BASE_USDC, call.address)
        if self.transfer and idle:
            problems.append(f"{idle} left in the smart account")
        if not self.transfer and not idle:
            problems.append("nothing left in the smart account")
        return problems


class Claim(OneWallet):
    """Reward claims of one wallet in Moonwell (WELL rewards), a few days apart."""

    def __init__(self, staked: bool) -> None:
        super().__init__()
        self.staked = staked
        self.name = f"claim staked={str(staked).lower()}"
        self.steps = 3 if staked else 2

    async def setup(self, world: CrashWorld, rounds: int) -> None:
        wallet = await _activate(world, 50_000 * USDC, user_eoa(0), protocols=("moonwell",))
        if self.staked:
            lifecycle = make_lifecycle(world.engine, simulated_chains(world.market, load_catalog()))
            await lifecycle.set_reward_staking(world.partner_id, BASE, wallet.address, True)
        self.wallet = wallet

    def call(self, world: CrashWorld, index: int, rng: random.Random) -> Call:
        address, eoa = self.account(index)
        world.market.advance(rng.randint(1, 5) * DAY)
        request = rewards_pb2.ClaimRewardsRequest(chain_id=BASE, wallet=address)
        return Call(OperationKind.CLAIM, "RewardService/ClaimRewards", request, address, eoa)

    def check(self, world: CrashWorld, call: Call, added: Moves, answer: Any) -> list[str]:
        if self.staked:
            problems = _expect(added, claims=1, swaps=1)
        else:
            problems = _expect(added, claims=1, sends=1)
        claimed = sum(c.amount for c in added.claims)
        answered = sum(int(r.amount) for r in answer.rewards)
        if claimed != answered:
            problems.append(f"claimed {claimed} on chain, answered {answered}")
        handled = sum(s.amount for s in (added.swaps if self.staked else added.sends))
        if handled != claimed:
            problems.append(f"claimed {claimed}, swapped or sent {handled}")
        left = world.market.balance(BASE, WELL, call.address)
        if left:
            problems.append(f"{left} WELL left in the smart account")
        return problems


PATHS: dict[str, Callable[[], MoneyPath]] = {
    "activation": Activation,
    "top-up": TopUp,
    "withdrawal": Withdrawal,
    "deactivation-transfer": lambda: Deactivation(transfer=True),
    "deactivation-no-transfer": lambda: Deactivation(transfer=False),
    "claim-staked": lambda: Claim(staked=True),
    "claim-not-staked": lambda: Claim(staked=False),
}


# -- killing --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Kill:
    """One SIGKILL: the moment drawn, and what it interrupted."""

    round: int
    moment: str
    running: bool
    left: str
    """The call's operation as the process died."""

    def __str__(self) -> str:
        ended = "" if self.running else " (the process had ended)"
        return f"round {self.round}, {self.moment}: {self.left}{ended}"


def _progress(row: OperationRow | None) -> int:
    """How far an operation went: its steps stored, plus those mined."""
    if row is None:
        return 0
    steps = json.loads(row.steps)
    return len(steps) + sum(1 for step in steps if step.get("tx_hash"))


def _describe(row: OperationRow | None) -> str:
    if row is None:
        return "no operation stored"
    steps = json.loads(row.steps)
    mined = sum(1 for step in steps if step.get("tx_hash"))
    return f"operation {row.status}, {mined} of {len(steps)} steps mined"


@dataclass(slots=True)
class Round:
    """One call of a path, the kills around it, and what it answered before dying."""

    index: int
    call: Call
    key: str
    kills: list[Kill] = field(default_factory=list)
    answer: Any = None
    left: tuple[str, str] | None = None
    """The operation's status and steps as the last kill left them (None: not stored)."""


class Crashes:
    """Plays one path's rounds against the served process, killing it as drawn."""

    def __init__(
        self, world: CrashWorld, servers: Servers, path: MoneyPath, rng: random.Random
    ) -> None:
        self.world = world
        self.servers = servers
        self.path = path
        self.rng = rng
        self.kills: list[Kill] = []

    def row(self, round_: Round) -> OperationRow | None:
        """The round's operation, found by its idempotency key."""
        key = scoped(self.world.partner_id, round_.call.kind, round_.key)
        assert key is not None
        return operation_row(self.world.engine, key)

    def _send(self, round_: Round) -> Any:
        assert self.servers.channel is not None
        return send(self.servers.channel, round_.call, self.world.credentials(round_.key))

    def _watch(
        self, round_: Round, future: Any, reached: Callable[[OperationRow | None], bool]
    ) -> None:
        """Polls the round's operation until ``reached(row)``, or the call ended."""
        deadline = time.monotonic() + 30.0
        while not future.done() and time.monotonic() < deadline:
            if reached(self.row(round_)):
                return
            time.sleep(0.001)

    def _kill(self, round_: Round, moment: str) -> None:
        running = self.servers.kill()
        row = self.row(round_)
        round_.left = (row.status, row.steps) if row is not None else None
        kill = Kill(round_.index, moment, running, _describe(row))
        round_.kills.append(kill)
        self.kills.append(kill)
        expire_idempotency_leases(self.world.engine)  # as 20 s after the kill
        if self.rng.random() < LAPSE_AT_ONCE:
            expire_leases(self.world.engine)  # as LEASE_SECONDS after the kill

    def first_kill(self, round_: Round) -> None:
        """Sends the round's call and kills the service at a drawn moment."""
        rng = self.rng
        moment = rng.choice(MOMENTS)
        if moment == "before the call":
            self._kill(round_, moment)
            return
        future = self._send(round_)
        if moment == "as the call arrives":
            time.sleep(rng.uniform(0.0, 0.03))
        elif moment == "intent stored":
            self._watch(round_, future, lambda row: row is not None)
            time.sleep(rng.uniform(0.0, 0.002))
        elif moment == "steps":
            target = rng.randint(2, 2 * self.path.steps)
            moment = f"steps ({target})"
            self._watch(round_, future, lambda row: _progress(row) >= target)
            time.sleep(rng.uniform(0.0, 0.002))
        else:
            try:
                future.result(timeout=CALL_SECONDS)
            except grpc.RpcError as error:
                raise AssertionError(
                    f"{self.context(round_)}: the call failed: {error.code()} "
                    f"{error.details()}\n{self.servers.logs()}"
                ) from error
        if future.done() and future.exception() is None:
            round_.answer = future.result()
        self._kill(round_, moment)

    def recovery_kill(self, round_: Round) -> None:
        """Kills the restarted service while it finishes what the first kill left: as the
        retry settles it, or the worker's reconciliation."""
        future = self._send(round_) if self.rng.random() < 0.5 else None
        deadline = time.monotonic() + 15.0
        while time.monotonic() < deadline and (future is None or not future.done()):
            row = self.row(round_)
            if row is not None and (row.status, row.steps) != round_.left:
                break  # it began (or already finished)
            time.sleep(0.001)
        time.sleep(self.rng.uniform(0.0, 0.002))
        self._kill(round_, "recovery" + (", retry sent" if future is not None else ""))

    def play(self, index: int) -> Round:
        """One round's call and kills; returns it with the service serving again."""
        call = self.path.call(self.world, index, self.rng)
        round_ = Round(index, call, f"{self.path.name}:{index}:{self.rng.getrandbits(32):08x}")
        self.first_kill(round_)
        self.servers.start()
        left_open = round_.left is not None and round_.left[0] in OPEN
        if left_open and len(self.kills) < KILLS and self.rng.random() < RECOVERY_KILLS:
            self.recovery_kill(round_)
            self.servers.start()
        if self.rng.random() < 0.5:  # the worker's reconciliation finishes it before the retry
            wait_until(lambda: _closed(self.row(round_)), QUIET_SECONDS)
        return round_

    def retry(self, round_: Round) -> Any:
        """The call again, with the same key; fails the test unless it succeeds."""
        try:
            return self._send(round_).result(timeout=CALL_SECONDS)
        except grpc.RpcError as error:
            raise AssertionError(
                f"{self.context(round_)}: the retry failed: {error.code()} {error.details()}\n"
                f"{self.servers.logs()}"
            ) from error

    def context(self, round_: Round) -> str:
        """Where a failure happened, to replay it."""
        return (
            f"YIELDAGENT_CRASH_SEED={SEED}, {self.path.name}, round {round_.index} "
            f"(key {round_.key}), kills: {[str(k) for k in round_.kills]}"
        )


def _closed(row: OperationRow | None) -> bool:
    return row is None or row.status not in OPEN


def _quiet(world: CrashWorld) -> bool:
    """Whether nothing is left to finish and no agent run is due or under way (a run
    makes its wallet ``running`` while it lasts). The three reads are not one snapshot: a
    run the worker starts between them could slip through (due no more, not yet running
    when read), so the answer must hold twice, a worker tick apart."""
    if not _quiet_now(world.engine):
        return False
    time.sleep(QUIET_RECHECK_SECONDS)
    return _quiet_now(world.engine)


def _quiet_now(engine: Engine) -> bool:
    return not (due_wallets(engine) or unsettled_wallets(engine) or open_operations(engine))


def _check_round(crashes: Crashes, round_: Round, answer: Any, before: Moves) -> None:
    """Everything a round must leave true, once reconciliation is done."""
    world, path, context = crashes.world, crashes.path, crashes.context(round_)
    if round_.answer is not None:
        replayed = answer.SerializeToString(deterministic=True)
        assert replayed == round_.answer.SerializeToString(deterministic=True), (
            f"{context}: the retry answered {answer}, the killed call {round_.answer}"
        )
    assert wait_until(lambda: _quiet(world), QUIET_SECONDS), (
        f"{context}: still open after {QUIET_SECONDS} s: operations "
        f"{[(o.kind, o.status, o.reason) for o in open_operations(world.engine)]}, "
        f"wallets {unsettled_wallets(world.engine)}, due {due_wallets(world.engine)}\n"
        f"{crashes.servers.logs()}"
    )
    ended = crashes.row(round_)
    assert ended is not None and ended.status == OperationStatus.COMPLETED, (
        f"{context}: {_describe(ended)} ({ended.reason if ended else ''})"
    )
    added = moves(world.market, round_.call.address, round_.call.eoa).since(before)
    problems = path.check(world, round_.call, added, answer)
    assert not problems, f"{context}: {problems}"
    wallets = WalletStore(world.engine).wallets(BASE)
    books = book_disagreements(world.engine, world.market, wallets)
    assert not books, f"{context}: the books disagree with the chain:\n" + "\n".join(books)


@pytest.mark.parametrize("path_name", list(PATHS))
def test_a_money_path_killed_at_random_moments_keeps_its_books(
    path_name: str, database_url: str, tmp_path: Path
) -> None:
    path = PATHS[path_name]()
    backend = "sqlite" if database_url.startswith("sqlite") else "postgresql"
    rng = random.Random(f"{SEED}:{path_name}:{backend}")
    began = time.monotonic()
    servers = Servers(database_url, tmp_path / "data")  # its fork server imports meanwhile
    try:
        world = open_crash_world(database_url)
    except BaseException:
        servers.close()
        raise
    crashes = Crashes(world, servers, path, rng)
    rounds = 0
    try:
        asyncio.run(path.setup(world, KILLS))
        servers.start()
        while len(crashes.kills) < KILLS:
            before = moves(world.market, *path.account(rounds))
            round_ = crashes.play(rounds)
            rounds += 1
            _check_round(crashes, round_, crashes.retry(round_), before)
    finally:
        servers.close()
        world.engine.dispose()
        print(
            f"\n{path.name} on {backend}: YIELDAGENT_CRASH_SEED={SEED}, {len(crashes.kills)} "
            f"kills in {rounds} rounds, {servers.started} starts, "
            f"{time.monotonic() - began:.1f} s"
        )
        for kill in crashes.kills:
            print(f"  {kill}")


# -- SIGTERM --------------------------------------------------------------------------------


def test_sigterm_lets_a_withdrawal_in_progress_finish(database_url: str, tmp_path: Path) -> None:
    """SIGTERM while a withdrawal is in progress: the service stops serving, and the
    withdrawal finishes within the shutdown grace instead of being cancelled.

    The simulated chain answers at once, so a withdrawal's steps never give the event loop
    a turn: a signal can only be handled while a call waits. Here the withdrawal waits for
    its wallet's lease, which the test holds as another replica busy with the wallet would.
    The test sends SIGTERM once the call is in the service (its idempotency key claimed),
    sees the service stop serving, and only then lets the lease go.
    """
    world = open_crash_world(database_url)
    port = free_port()
    env = serve_env(database_url, tmp_path / "data", port, YIELDAGENT_SHUTDOWN_GRACE_SECONDS="30")
    server = ServeProcess(env)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        wallet = asyncio.run(_activate(world, 100_000 * USDC, user_eoa(0)))
        world.market.advance(30 * DAY)
        assert server.logs.wait_for("grpc server started", timeout=60), server.logs.tail()
        store = WalletStore(world.engine)
        other = "another-replica"
        # The service's agent may be running the wallet (it is due): its lease goes when
        # the run ends.
        deadline = time.monotonic() + 30
        while not store.acquire_lease(wallet.id, other, time.time() + 120, time.time()):
            assert time.monotonic() < deadline, "the wallet's lease was never free"
            time.sleep(0.05)
        amount = 5_000 * USDC
        request = wallets_pb2.WithdrawRequest(
            chain_id=BASE, wallet=wallet.address, amount=str(amount)
        )
        call = Call(
            OperationKind.WITHDRAW, "WalletService/Withdraw", request, wallet.address, wallet.eoa
        )
        future = send(channel, call, world.credentials("sigterm"))
        assert wait_until(lambda: _key_in_progress(world, "sigterm"), 30)

        server.terminate()
        assert server.logs.wait_for("stopping", timeout=30)
        assert wait_until(lambda: _refused(port), 30), "the service still serves"
        assert not future.done(), "the withdrawal ended while the wallet was busy"
        store.release_lease(wallet.id, other)

        answer = future.result(timeout=30)
        assert server.wait_exit(timeout=60) == 0
        assert server.logs.count("service stopped") == 1
        (detail,) = answer.withdraw_details
        fee = int(detail.fee_amount)
        added = moves(world.market, wallet.address, wallet.eoa)
        assert [(p.tx_hash, p.amount) for p in added.payouts] == [(detail.tx_hash, amount - fee)]
        assert [f.amount for f in added.fees] == [fee]
        assert fee > 0
        ended = operation_row(
            world.engine, scoped(world.partner_id, OperationKind.WITHDRAW, "sigterm") or ""
        )
        assert ended is not None and ended.status == OperationStatus.COMPLETED
        assert open_operations(world.engine) == []
        assert unsettled_wallets(world.engine) == []
        books = book_disagreements(world.engine, world.market, [wallet])
        assert not books, books
    finally:
        channel.close()
        server.kill()
        world.engine.dispose()


def _key_in_progress(world: CrashWorld, key: str) -> bool:
    with Session(world.engine) as session:
        row = session.exec(select(IdempotencyKeyRow).where(IdempotencyKeyRow.key == key)).first()
        return row is not None and row.state == "in_progress"


def _refused(port: int) -> bool:
    """Whether the service at ``port`` stopped serving: its health says so, or it
    refuses calls."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=2
            )
        except grpc.RpcError:
            return True
        return bool(reply.status != health_pb2.HealthCheckResponse.SERVING)
