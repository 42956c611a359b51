"""The one conservation check: a wallet's books agree with its chain, to the unit.

``book_disagreements`` computes each wallet's flows twice, independently: from the
simulated chain (its transaction history, balances and positions) and from the ledger
(``WalletStore``: deposits, withdrawals, the stored principal and status), and lists every
way they differ. ``assert_books_balance`` fails the test with that list.

What the simulated chain's history says
---------------------------------------
``SimulatedMarket.history(chain_id, holder, since_block)`` lists every mined row whose
``sender`` or ``recipient`` is the holder, in mining order. Each row is one transaction with one
movement; a row's ``kind`` says what moved:

- ``mint``: the faucet (``FAUCET``, the sender) creates ``amount`` of ``token`` for the
  recipient. ``deposit_from(sender, recipient)`` mints to ``sender`` and then transfers to
  ``recipient``: two rows, two hashes.
- ``transfer``: an ERC-20 transfer from ``sender`` to ``recipient``.
- ``supply``: ``sender`` is the holder, ``recipient`` the protocol's *name* ("aave"): idle
  funds become a position. The wallet's value does not change.
- ``withdraw``: ``sender`` is the protocol's name, ``recipient`` the holder: a position
  becomes idle funds. Not an inflow.
- ``swap``: ``sender`` = ``recipient`` = the holder, ``token``/``amount`` are what went
  in; ``token_out``/``amount_out`` what came out (the chain port's ``ChainTx`` drops these
  two). Rewards swapped into the wallet's token are yield, not principal.
- ``claim``: the faucet sends accrued reward tokens to the holder (never the wallet's
  token on the simulated market).

The rules, for each wallet (on its token)
-----------------------------------------
Chain *inflows* are the ``transfer`` and ``mint`` rows of the wallet's token whose
recipient is the smart account (and whose sender is not the account itself), whoever sent
them. Chain *outflows* are the ``transfer`` rows of the wallet's token from the account to
someone else; supplies go to protocols and are no outflow. An outflow to the fee collector
is a *fee*; any other is a *payout*.

(a) The ledger's deposits are exactly the chain's inflows: the same tx hashes, each
    credited once, with the same amounts and token. A deposit without a tx hash (credited
    by balance) is a disagreement.
(b) Σ (amount − fee) of the withdrawals of kind "withdrawal" + Σ amount of those of kind
    "external" = Σ payouts on chain.
(c) Σ fee of the withdrawals = Σ outflows to the fee collector on chain.
(d) The stored principal = Σ deposits − Σ principal of the withdrawals.
(e) Every withdrawal: principal + yield = amount, principal ≥ 0, 0 ≤ fee ≤ yield; an
    "external" one has no fee; no other kind exists.
(f) Conservation, to the unit: deposits + yield = value + withdrawn + fees, with deposits,
    withdrawn (payouts) and fees from the chain, value = idle balance + positions on chain,
    and yield = Σ yield of the withdrawals (realized) + (value − principal) (unrealized).
    The unrealized yield is never negative through our bookkeeping: value ≥ principal,
    less the protocols' own rounding (``ROUNDING_PER_MOVE`` per supply or withdrawal) and
    the wallet's share of the bad debt its pools wrote off (the market's ``loss`` rows).
(g) The wallet is not left ``activating`` or ``running``, nor ``deactivating`` without a
    ``status_reason`` (funds genuinely stuck in a pool say so there).
(h) Its events (``domain.books.events``) tell the same story, each once: one
    ``deposit_credited`` per deposit and one ``withdrawn`` per withdrawal (same chain
    event, same amounts), one ``reward_claimed`` per reward record, one ``run_completed``
    per ended run that moved funds; ``activated`` and ``deactivated`` alternate, starting
    with ``activated``, and the last of them matches the wallet's status; ids grow.

And once for each chain of the wallets checked (every wallet of that chain, checked or not):

(i) The chain's stored totals (``domain.books.aggregates``, kept with each commit) equal a full
    recomputation the slow way, from every wallet and every deposit of the chain: per
    token, the holding wallets (not deactivated) and what they hold, the active wallets and
    the exact sum of their APRs, every deposit, each wallet's first deposit (earliest date,
    then first booked); per protocol and token, the holding wallets that name it and what
    they have there; and the chain's transaction count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sqlalchemy import Engine

from support.agent_setup import runs_of
from support.wallet_setup import FEE
from yieldagent.chain.simulated.market import LOSS, SimulatedMarket
from yieldagent.domain.books.aggregates import Totals, apr_units
from yieldagent.domain.books.effects import run_moves
from yieldagent.domain.books.events import (
    ACTIVATED,
    DEACTIVATED,
    DEPOSIT_CREDITED,
    KINDS,
    REWARD_CLAIMED,
    RUN_COMPLETED,
    WITHDRAWN,
)
from yieldagent.domain.books.wallet_states import ACTIVE, WalletStatus
from yieldagent.domain.books.wallets import DepositRecord, Wallet, WithdrawalRecord
from yieldagent.domain.pagination import PageRequest
from yieldagent.simulated_world.state import MinedTx
from yieldagent.storage.events import EventStore
from yieldagent.storage.wallets import WalletStore

ROUNDING_PER_MOVE = 2
"""Units a pool may keep per supply or withdrawal: it mints ⌊x·RAY/index⌋ scaled units
and burns ⌈y·RAY/index⌉, always in its own favour (at most ⌈index⌉ units, 2 once the
index passes 1). With simulated time standing still no interest covers that, so a
wallet's value may sit this much below its principal for each move it made."""

WITHDRAWAL_KINDS = frozenset({"withdrawal", "external"})
UNFINISHED = frozenset({WalletStatus.ACTIVATING, WalletStatus.RUNNING})


@dataclass(frozen=True, slots=True)
class Movement:
    """One transfer of the wallet's token, as the chain shows it."""

    tx_hash: str
    amount: int


@dataclass(frozen=True, slots=True)
class ChainBooks:
    """One wallet's flows of its token as the chain shows them."""

    inflows: list[MinedTx] | list[Movement]
    payouts: list[MinedTx] | list[Movement]
    fees: list[MinedTx] | list[Movement]
    moves: int
    """Supplies and withdrawals: each may lose ``ROUNDING_PER_MOVE`` units."""
    value: int
    losses: int = 0
    """The wallet's share of the bad debt its pools wrote off."""


def chain_books(market: SimulatedMarket, wallet: Wallet, fee_collector: str = FEE) -> ChainBooks:
    """The wallet's inflows, payouts, fees and value of its token, read from the chain."""
    account, token = wallet.address, wallet.token
    rows = market.history(wallet.chain_id, account, 0)
    inflows = [
        r
        for r in rows
        if r.kind in ("transfer", "mint")
        and r.token == token
        and r.recipient == account
        and r.sender != account
    ]
    outflows = [
        r
        for r in rows
        if r.kind == "transfer"
        and r.token == token
        and r.sender == account
        and r.recipient != account
    ]
    moves = sum(1 for r in rows if r.kind in ("supply", "withdraw") and r.token == token)
    idle = market.balance(wallet.chain_id, token, account)
    held = sum(amount for _, amount in market.positions(wallet.chain_id, token, account))
    return ChainBooks(
        inflows=inflows,
        payouts=[r for r in outflows if r.recipient != fee_collector],
        fees=[r for r in outflows if r.recipient == fee_collector],
        moves=moves,
        value=idle + held,
        losses=sum(r.amount for r in rows if r.kind == LOSS and r.token == token),
    )


def withdrawal_kind(record: WithdrawalRecord) -> str:
    """Whether the service made the withdrawal ("withdrawal") or found it on chain
    ("external")."""
    return record.kind


def book_disagreements(
    engine: Engine,
    market: SimulatedMarket | Callable[[Wallet], ChainBooks],
    wallets: Iterable[Wallet | int],
    fee_collector: str = FEE,
) -> list[str]:
    """Every way the ledger of ``wallets`` (or wallet ids) disagrees with the chain; empty
    when the books are true. See the module's docstring for the rules. ``market`` is the
    simulated chain, or what reads a wallet's ``ChainBooks`` from a real one."""
    store = WalletStore(engine)
    problems: list[str] = []
    chains: set[int] = set()
    for item in wallets:
        wallet_id = item if isinstance(item, int) else item.id
        wallet = store.get_by_id(wallet_id)
        if wallet is None:
            problems.append(f"wallet {wallet_id} is not stored")
            continue
        chains.add(wallet.chain_id)
        problems += [
            f"wallet {wallet.id} ({wallet.address}): {problem}"
            for problem in _disagreements(
                engine, store, _read(market, wallet, fee_collector), wallet
            )
        ]
    for chain_id in sorted(chains):
        problems += [f"chain {chain_id}: {p}" for p in total_disagreements(store, chain_id)]
    return problems


def recomputed_totals(store: WalletStore, chain_id: int) -> Totals:
    """A chain's totals the slow way: every wallet and every deposit of the chain, as the
    statistics were computed before they were kept (independent of
    ``domain.books.aggregates.changes``)."""
    totals = Totals()
    for wallet in store.wallets(chain_id):
        token = totals.token(wallet.token)
        if wallet.status == WalletStatus.DEACTIVATED:
            continue
        token.held_wallets += 1
        token.held += wallet.idle + sum(wallet.positions.values())
        if wallet.status in ACTIVE:
            token.active_wallets += 1
            token.apr_units += apr_units(wallet.current_apr)
        for protocol, amount in wallet.positions.items():
            placed = totals.protocol(protocol, wallet.token)
            placed.wallets += 1
            placed.amount += amount
    first: dict[int, DepositRecord] = {}
    for wallet_id, deposit in store.all_deposits(chain_id):  # oldest first, then by id
        first.setdefault(wallet_id, deposit)
        totals.token(deposit.token).deposited += deposit.amount
    for deposit in first.values():
        totals.token(deposit.token).first_wallets += 1
        totals.token(deposit.token).first_deposited += deposit.amount
    return totals.pruned()


def total_disagreements(store: WalletStore, chain_id: int) -> list[str]:
    """Rule (i): the chain's stored totals against a recomputation."""
    stored = store.totals(chain_id)
    expected = recomputed_totals(store, chain_id)
    problems: list[str] = []
    transactions = sum(t.transactions for t in stored.tokens.values())
    if transactions != store.count_transactions(chain_id):
        problems.append(
            f"(i) {transactions} transactions in the totals, "
            f"{store.count_transactions(chain_id)} stored"
        )
    for t in stored.tokens.values():
        t.transactions = 0
    stored = stored.pruned()
    if stored.tokens != expected.tokens:
        problems.append(f"(i) token totals {stored.tokens} ≠ recomputed {expected.tokens}")
    if stored.protocols != expected.protocols:
        problems.append(f"(i) protocol totals {stored.protocols} ≠ recomputed {expected.protocols}")
    return problems


def _read(
    source: SimulatedMarket | Callable[[Wallet], ChainBooks], wallet: Wallet, fee_collector: str
) -> ChainBooks:
    if isinstance(source, SimulatedMarket):
        return chain_books(source, wallet, fee_collector)
    return source(wallet)


def _disagreements(
    engine: Engine, store: WalletStore, chain: ChainBooks, wallet: Wallet
) -> list[str]:
    problems: list[str] = []
    deposits = store.deposits(wallet.id)
    withdrawals = store.withdrawals(wallet.id)

    # (a) deposits are the chain's inflows, each once
    unhashed = [d.amount for d in deposits if d.tx_hash is None]
    if unhashed:
        problems.append(f"(a) deposits credited without a tx hash (by balance): {unhashed}")
    wrong_token = [d.tx_hash for d in deposits if d.token != wallet.token]
    if wrong_token:
        problems.append(f"(a) deposits of another token than {wallet.token}: {wrong_token}")
    credited = Counter(d.tx_hash for d in deposits if d.tx_hash is not None)
    twice = sorted(h for h, n in credited.items() if n > 1)
    if twice:
        problems.append(f"(a) inflows credited more than once: {twice}")
    on_chain = {r.tx_hash: r.amount for r in chain.inflows}
    ledger = {d.tx_hash: d.amount for d in deposits if d.tx_hash is not None}
    missing = {h: a for h, a in on_chain.items() if h not in ledger}
    if missing:
        problems.append(f"(a) inflows on chain never credited: {missing}")
    phantom = {h: a for h, a in ledger.items() if h not in on_chain}
    if phantom:
        problems.append(f"(a) deposits that are no inflow on chain: {phantom}")
    amounts = {h: (ledger[h], a) for h, a in on_chain.items() if h in ledger and ledger[h] != a}
    if amounts:
        problems.append(f"(a) deposits credited with another amount (ledger, chain): {amounts}")

    # (e) each withdrawal splits exactly, with a fee on its yield only
    kinds = [withdrawal_kind(w) for w in withdrawals]
    for w, kind in zip(withdrawals, kinds, strict=True):
        name = f"withdrawal {w.tx_hash} ({kind})"
        if kind not in WITHDRAWAL_KINDS:
            problems.append(f"(e) {name}: unknown kind")
        if w.principal + w.yield_ != w.amount:
            problems.append(f"(e) {name}: {w.principal} + {w.yield_} ≠ amount {w.amount}")
        if w.principal < 0 or w.yield_ < 0:
            problems.append(f"(e) {name}: negative principal {w.principal} or yield {w.yield_}")
        if not 0 <= w.fee <= w.yield_:
            problems.append(f"(e) {name}: fee {w.fee} outside 0..yield {w.yield_}")
        if kind == "external" and w.fee != 0:
            problems.append(f"(e) {name}: an external withdrawal charged a fee of {w.fee}")

    # (b) what left for the user (or anyone) and (c) the fees
    recorded_out = sum(
        w.amount - w.fee if kind == "withdrawal" else w.amount
        for w, kind in zip(withdrawals, kinds, strict=True)
    )
    paid_out = sum(r.amount for r in chain.payouts)
    if recorded_out != paid_out:
        problems.append(
            f"(b) withdrawals record {recorded_out} paid out, the chain shows {paid_out} "
            f"in {len(chain.payouts)} transfers"
        )
    recorded_fees = sum(w.fee for w in withdrawals)
    fees = sum(r.amount for r in chain.fees)
    if recorded_fees != fees:
        problems.append(
            f"(c) withdrawals record {recorded_fees} of fees, the chain shows {fees} "
            f"sent to the fee collector in {len(chain.fees)} transfers"
        )

    # (d) the stored principal
    principal = sum(d.amount for d in deposits) - sum(w.principal for w in withdrawals)
    if wallet.principal != principal:
        problems.append(
            f"(d) stored principal {wallet.principal} ≠ deposits − withdrawn principal "
            f"= {principal}"
        )

    # (f) conservation, and no negative yield through our bookkeeping
    deposited = sum(r.amount for r in chain.inflows)
    realized = sum(w.yield_ for w in withdrawals)
    unrealized = chain.value - wallet.principal
    if deposited + realized + unrealized != chain.value + paid_out + fees:
        problems.append(
            f"(f) deposits {deposited} + yield {realized + unrealized} "
            f"(realized {realized}, unrealized {unrealized}) ≠ value {chain.value} + "
            f"withdrawn {paid_out} + fees {fees}"
        )
    if unrealized < -ROUNDING_PER_MOVE * chain.moves - chain.losses:
        problems.append(
            f"(f) value {chain.value} on chain is below the stored principal "
            f"{wallet.principal} by more than the rounding of {chain.moves} moves "
            f"and {chain.losses} of bad debt"
        )

    # (g) nothing left half done
    if wallet.status in UNFINISHED:
        problems.append(f"(g) left {wallet.status}")
    if wallet.status == WalletStatus.DEACTIVATING and not wallet.status_reason:
        problems.append("(g) left deactivating with no reason")
    return problems + _event_disagreements(engine, store, wallet, deposits, withdrawals)


def _event_disagreements(
    engine: Engine,
    store: WalletStore,
    wallet: Wallet,
    deposits: list[DepositRecord],
    withdrawals: list[WithdrawalRecord],
) -> list[str]:
    """Rule (h): the wallet's events against its records."""
    events = EventStore(engine).after(wallet.id, 0, 100_000)
    problems: list[str] = []
    of = {kind: [e for e in events if e.kind == kind] for kind in KINDS}
    ids = [e.id for e in events]
    if ids != sorted(set(ids)):
        problems.append(f"(h) event ids out of order or repeated: {ids}")
    credited = Counter(
        (e.data["tx_hash"], e.data["log_index"], e.amount) for e in of[DEPOSIT_CREDITED]
    )
    booked = Counter((d.tx_hash, d.log_index, d.amount) for d in deposits)
    if credited != booked:
        problems.append(f"(h) deposit events {dict(credited)} ≠ deposits {dict(booked)}")
    announced = Counter(
        (e.data["tx_hash"], e.data["log_index"], e.amount, int(e.data["fee_amount"]))
        for e in of[WITHDRAWN]
    )
    recorded = Counter((w.tx_hash, w.log_index, w.amount, w.fee) for w in withdrawals)
    if announced != recorded:
        problems.append(f"(h) withdrawal events {dict(announced)} ≠ withdrawals {dict(recorded)}")
    rewards, _ = store.rewards(wallet.id, PageRequest(1, 100_000, False))
    claimed = Counter((e.data["tx_hash"], e.data["token"], e.amount) for e in of[REWARD_CLAIMED])
    if claimed != Counter((r.tx_hash, r.token, r.amount) for r in rewards):
        problems.append(f"(h) reward events {dict(claimed)} ≠ {len(rewards)} reward records")
    moved = Counter(run.id for run in runs_of(engine, wallet.id) if not run.open and run_moves(run))
    runs = Counter(e.data["run_id"] for e in of[RUN_COMPLETED])
    if runs != moved:
        problems.append(f"(h) run events {dict(runs)} ≠ ended runs that moved funds {dict(moved)}")
    turns = [e.kind for e in events if e.kind in (ACTIVATED, DEACTIVATED)]
    alternating = [ACTIVATED if n % 2 == 0 else DEACTIVATED for n in range(len(turns))]
    if turns != alternating:
        problems.append(f"(h) activations and deactivations do not alternate: {turns}")
    last = turns[-1] if turns else None
    expected = {WalletStatus.DEACTIVATED: (DEACTIVATED, None)}.get(wallet.status, (ACTIVATED,))
    if last not in expected:
        problems.append(f"(h) the last of {turns} does not match the status {wallet.status}")
    return problems


def assert_books_balance(
    engine: Engine,
    market: SimulatedMarket | Callable[[Wallet], ChainBooks],
    wallets: Iterable[Wallet | int],
    fee_collector: str = FEE,
) -> None:
    """Fails, listing every disagreement, unless the books of ``wallets`` are true."""
    problems = book_disagreements(engine, market, wallets, fee_collector)
    assert not problems, "the books disagree with the chain:\n" + "\n".join(problems)
