"""The tables, as SQLModel classes. Migrations in ``migrations/versions`` create them.

Token amounts are stored as ``NUMERIC(78, 0)``: exact integers up to 2**256.

Every table is here, in one module longer than the house's usual: the whole schema reads
in one place, next to the migrations that make it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Column, Index, Integer, Text, UniqueConstraint, text
from sqlmodel import Field, SQLModel

from yieldagent.storage.types import TokenAmount, UtcDateTime

ACTIVE_ONLY = "active"
"""The condition of the index of due wallets (``ix_wallet_schedule_due``): the agent runs
only activated wallets. A query uses that index only if it states the condition as written
here."""

SCHEDULE_FILLFACTOR = 50
"""PostgreSQL: the share of each page of ``wallet_schedule`` that inserts fill. A claim
leases every row of a page at once; the room left keeps those updates, which touch no
indexed column, on their page (HOT updates: no new index entries)."""


def utc_column() -> Column[datetime]:
    """A timezone-aware timestamp column, stored in UTC."""
    return Column(UtcDateTime(), nullable=False)


class PartnerRow(SQLModel, table=True):
    """A partner that integrates the API; its key is kept only as a digest."""

    __tablename__ = "partners"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=63, unique=True, index=True)
    api_key_digest: str = Field(max_length=64)
    previous_key_digest: str | None = Field(
        default=None, max_length=64, description="the key before a rotation with grace"
    )
    previous_key_expires_at: float | None = Field(
        default=None, description="wall-clock unix time the previous key stops working"
    )
    active: bool = True
    permissions: str = Field(max_length=255, description="comma-separated permission names")
    created_at: datetime = Field(sa_column=utc_column())
    updated_at: datetime = Field(sa_column=utc_column())


class SmartAccountRow(SQLModel, table=True):
    """A smart account created for a user's EOA, owned by the partner that created it."""

    __tablename__ = "smart_accounts"
    __table_args__ = (
        UniqueConstraint("chain_id", "eoa", "agent_id", "provider", name="uq_smart_accounts_key"),
    )

    id: int | None = Field(default=None, primary_key=True)
    chain_id: int = Field(index=True)
    eoa: str = Field(max_length=42)
    agent_id: str = Field(max_length=128)
    address: str = Field(max_length=42, index=True)
    partner_id: int = Field(foreign_key="partners.id", index=True)
    provider: str = Field(default="zerodev", max_length=16)
    fee_collector: str = Field(
        default="", max_length=42, description="the collector a Safe account registered at set-up"
    )
    created_at: datetime = Field(sa_column=utc_column())


# -- the simulated chain -------------------------------------------------------


class SimClockRow(SQLModel, table=True):
    """The simulated clock (one row): where simulated time stands and how fast it runs."""

    __tablename__ = "sim_clock"

    id: int = Field(default=1, primary_key=True)
    seed: int
    genesis: int = Field(sa_type=BigInteger, description="simulated unix time of block 0")
    anchor: int = Field(sa_type=BigInteger, description="simulated unix time at anchor_wall")
    anchor_wall: float = Field(description="wall-clock unix time of the anchor")
    speed: float = Field(description="simulated seconds per wall-clock second")
    sequence: int = Field(default=0, sa_type=BigInteger, description="transactions so far")


class SimPoolRow(SQLModel, table=True):
    """A simulated pool and its markets (as JSON)."""

    __tablename__ = "sim_pools"
    __table_args__ = (UniqueConstraint("chain_id", "protocol", "token"),)

    id: int | None = Field(default=None, primary_key=True)
    chain_id: int
    protocol: str = Field(max_length=64)
    token: str = Field(max_length=42)
    kind: str = Field(max_length=32)
    fee: int = Field(sa_type=TokenAmount)
    liquidity_index: int = Field(sa_type=TokenAmount)
    scaled_supply: int = Field(sa_type=TokenAmount)
    markets: str = Field(sa_type=Text, description="JSON list of markets, amounts as strings")
    updated_at: int = Field(sa_type=BigInteger)
    next_step: int = Field(sa_type=BigInteger)
    reward_token: str | None = Field(default=None, max_length=42)
    reward_rate: int = Field(sa_type=TokenAmount)
    reward_index: int = Field(sa_type=TokenAmount)
    switches: str = Field(
        default="", max_length=32, description="what is paused: supply, withdraw (comma list)"
    )
    history: str = Field(
        default="[]", sa_type=Text, description="JSON list of the pool's recent snapshots"
    )


class SimPriceRow(SQLModel, table=True):
    """A simulated price feed: a token's price and the price it is pegged to (or was
    first quoted at), both with ``PRICE_DECIMALS`` decimals."""

    __tablename__ = "sim_prices"

    chain_id: int = Field(primary_key=True)
    symbol: str = Field(max_length=32, primary_key=True)
    price: int = Field(sa_type=TokenAmount)
    peg: int = Field(sa_type=TokenAmount)


class SimSequencerRow(SQLModel, table=True):
    """A simulated chain's L2 sequencer uptime feed, once a scenario set it: whether the
    sequencer is up, and since when (its ``startedAt``)."""

    __tablename__ = "sim_sequencers"

    chain_id: int = Field(primary_key=True)
    up: bool
    since: int = Field(sa_type=BigInteger, description="unix seconds the status began")


class SimPositionRow(SQLModel, table=True):
    """What one holder has supplied to one simulated pool."""

    __tablename__ = "sim_positions"
    __table_args__ = (Index("ix_sim_positions_holder", "holder"),)

    pool_id: int = Field(foreign_key="sim_pools.id", primary_key=True)
    holder: str = Field(max_length=42, primary_key=True)
    scaled: int = Field(sa_type=TokenAmount)
    reward_snapshot: int = Field(sa_type=TokenAmount)
    rewards_owed: int = Field(sa_type=TokenAmount)


class SimBalanceRow(SQLModel, table=True):
    """One holder's balance of one token on one simulated chain."""

    __tablename__ = "sim_balances"

    chain_id: int = Field(primary_key=True)
    token: str = Field(max_length=42, primary_key=True)
    holder: str = Field(max_length=42, primary_key=True)
    amount: int = Field(sa_type=TokenAmount)


class SimTransactionRow(SQLModel, table=True):
    """A mined simulated transaction: mints, transfers, supplies, withdrawals, swaps, claims."""

    __tablename__ = "sim_transactions"

    tx_hash: str = Field(max_length=66, primary_key=True)
    chain_id: int = Field(index=True)
    block_number: int = Field(sa_type=BigInteger)
    timestamp: int = Field(sa_type=BigInteger)
    sequence: int = Field(
        default=0, sa_type=BigInteger, description="mining order in the simulated world"
    )
    kind: str = Field(max_length=16)
    token: str = Field(max_length=42)
    sender: str = Field(max_length=42)
    recipient: str = Field(max_length=42)
    amount: int = Field(sa_type=TokenAmount)
    token_out: str | None = Field(default=None, max_length=42)
    amount_out: int | None = Field(default=None, sa_type=TokenAmount)


# -- wallets and their history -------------------------------------------------


class WalletRow(SQLModel, table=True):
    """A wallet (agent): its state, its rules, and what it holds at the last valuation."""

    __tablename__ = "wallets"
    __table_args__ = (UniqueConstraint("chain_id", "address"),)

    id: int | None = Field(default=None, primary_key=True)
    chain_id: int
    address: str = Field(max_length=42)
    eoa: str = Field(max_length=42, index=True)
    partner_id: int = Field(foreign_key="partners.id", index=True)
    status: str = Field(max_length=16, index=True)
    token: str = Field(max_length=42)
    selected_protocols: str = Field(sa_type=Text, description="JSON list of protocol names")
    constraints: str = Field(sa_type=Text, description="JSON of domain.constraints.Constraints")
    principal: int = Field(sa_type=TokenAmount)
    allocation: str = Field(sa_type=Text, description="JSON {protocol: amount} at last valuation")
    idle: int = Field(sa_type=TokenAmount, description="funds not supplied, at last valuation")
    current_apr: float = 0.0
    valued_at: datetime = Field(sa_column=utc_column())
    is_staked: bool = False
    activation_date: datetime = Field(sa_column=utc_column())
    last_deactivation_date: datetime | None = Field(
        default=None, sa_column=Column(UtcDateTime(), nullable=True)
    )
    last_reactivation_date: datetime | None = Field(
        default=None, sa_column=Column(UtcDateTime(), nullable=True)
    )
    version: int = Field(default=0, description="bumped by every commit of the wallet")
    synced_block: int = Field(
        default=0, sa_type=BigInteger, description="the ledger has booked the chain up to here"
    )
    status_reason: str = Field(default="", sa_type=Text, description="why it waits, if it does")
    withdrawable: int | None = Field(
        default=None, sa_type=TokenAmount, description="payable at once, at last valuation"
    )
    created_at: datetime = Field(sa_column=utc_column())
    updated_at: datetime = Field(sa_column=utc_column())


class WalletScheduleRow(SQLModel, table=True):
    """A wallet's lease, when the agent runs it next and how its last run ended (runs that
    move funds are also operations): one narrow row per wallet, apart from the wide wallets
    row and its indexes, so that the agent's claims, lease renewals and batch ends write
    little (``storage.schedule``, ``storage.runs``). ``active`` follows the wallet's status
    (activated or not) in the transaction of every wallet commit, and every commit first
    holds the lease it was made under (``storage.journals``)."""

    __tablename__ = "wallet_schedule"
    __table_args__ = (
        Index(
            "ix_wallet_schedule_due",
            "next_run_at",
            "wallet_id",
            sqlite_where=text(ACTIVE_ONLY),
            postgresql_where=text(ACTIVE_ONLY),
        ),
        {"postgresql_with": {"fillfactor": SCHEDULE_FILLFACTOR}},
    )

    wallet_id: int = Field(foreign_key="wallets.id", primary_key=True)
    active: bool = Field(description="the wallet is activated: the agent runs it")
    next_run_at: float = Field(default=0.0, description="wall-clock unix time; 0: at once")
    lease_owner: str | None = Field(default=None, max_length=64)
    lease_until: float | None = Field(default=None, description="wall-clock unix time")
    runs: int = Field(default=0, sa_type=BigInteger, description="the agent's runs so far")
    last_run_at: float | None = Field(default=None, description="wall-clock unix time")
    last_outcome: str = Field(default="", max_length=16, description="the last run's status")
    last_reason: str = Field(default="", sa_type=Text, description="why, for the last run")
    last_moved_at: float | None = Field(
        default=None, description="wall-clock unix time of the last run that moved funds"
    )


class DepositRow(SQLModel, table=True):
    """A deposit to a wallet: one inflow the chain shows, booked once per chain."""

    __tablename__ = "wallet_deposits"
    __table_args__ = (
        UniqueConstraint("chain_id", "tx_hash", "log_index", name="uq_wallet_deposits_event"),
    )

    id: int | None = Field(default=None, primary_key=True)
    wallet_id: int = Field(foreign_key="wallets.id", index=True)
    chain_id: int
    token: str = Field(max_length=42)
    amount: int = Field(sa_type=TokenAmount)
    tx_hash: str | None = Field(
        default=None, max_length=66, description="None: credited by balance before 0006"
    )
    log_index: int = 0
    block_number: int | None = Field(default=None, sa_type=BigInteger)
    date: datetime = Field(sa_column=utc_column())


class WithdrawalRow(SQLModel, table=True):
    """A withdrawal from a wallet (the service's, or external) and how it split."""

    __tablename__ = "wallet_withdrawals"
    __table_args__ = (
        UniqueConstraint("chain_id", "tx_hash", "log_index", name="uq_wallet_withdrawals_event"),
    )

    id: int | None = Field(default=None, primary_key=True)
    wallet_id: int = Field(foreign_key="wallets.id", index=True)
    token: str = Field(max_length=42)
    amount: int = Field(sa_type=TokenAmount)
    principal: int = Field(sa_type=TokenAmount)
    yield_: int = Field(sa_type=TokenAmount, sa_column_kwargs={"name": "yield"})
    fee: int = Field(sa_type=TokenAmount)
    value: float
    value_in_usd: float
    tx_hash: str | None = Field(default=None, max_length=66)
    chain_id: int | None = None
    log_index: int = 0
    kind: str = Field(default="withdrawal", max_length=16)
    block_number: int | None = Field(default=None, sa_type=BigInteger)
    date: datetime = Field(sa_column=utc_column())


class TransactionRow(SQLModel, table=True):
    """An on-chain transaction of a wallet, as its history lists it."""

    __tablename__ = "wallet_transactions"
    __table_args__ = (Index("ix_wallet_transactions_wallet_date", "wallet_id", "date"),)

    id: int | None = Field(default=None, primary_key=True)
    wallet_id: int = Field(foreign_key="wallets.id")
    action: str = Field(max_length=16)
    status: str = Field(max_length=16)
    token: str = Field(max_length=42)
    amount: int = Field(sa_type=TokenAmount)
    tx_hash: str = Field(max_length=66)
    protocol: str = Field(default="", max_length=64)
    new_token: str | None = Field(default=None, max_length=42)
    amount_out: int | None = Field(default=None, sa_type=TokenAmount)
    apr: float | None = None
    block_number: int | None = Field(default=None, sa_type=BigInteger)
    log_index: int = 0
    correlation_id: str | None = Field(default=None, max_length=36)
    date: datetime = Field(sa_column=utc_column())


class RewardRow(SQLModel, table=True):
    """A reward claim of a wallet."""

    __tablename__ = "wallet_rewards"
    __table_args__ = (Index("ix_wallet_rewards_wallet_date", "wallet_id", "date"),)

    id: int | None = Field(default=None, primary_key=True)
    wallet_id: int = Field(foreign_key="wallets.id")
    token: str = Field(max_length=42)
    token_symbol: str = Field(max_length=16)
    amount: int = Field(sa_type=TokenAmount)
    decimals: int
    dollar_value: float
    tx_hash: str = Field(max_length=66)
    is_staked: bool
    date: datetime = Field(sa_column=utc_column())


class PerformancePointRow(SQLModel, table=True):
    """A wallet's value just before any flow at a moment, and the net flow then."""

    __tablename__ = "performance_points"
    __table_args__ = (Index("ix_performance_points_wallet_at", "wallet_id", "at"),)

    id: int | None = Field(default=None, primary_key=True)
    wallet_id: int = Field(foreign_key="wallets.id")
    value: int = Field(sa_type=TokenAmount)
    flow: int = Field(sa_type=TokenAmount)
    at: datetime = Field(sa_column=utc_column())


# -- the agent -----------------------------------------------------------------------------


class OperationRow(SQLModel, table=True):
    """A money operation on a wallet (an agent run among them): its intent, stored before
    its first chain call, and its steps, each marked with its transaction once mined."""

    __tablename__ = "operations"

    id: str = Field(max_length=36, primary_key=True)
    wallet_id: int = Field(foreign_key="wallets.id", index=True)
    chain_id: int
    kind: str = Field(default="run", max_length=16)
    status: str = Field(max_length=16, index=True)
    params: str = Field(default="{}", sa_type=Text, description="JSON of what was asked")
    steps: str = Field(sa_type=Text, description="JSON list of steps")
    idempotency_key: str | None = Field(default=None, max_length=300, unique=True, index=True)
    result: str | None = Field(default=None, sa_type=Text, description="JSON of the answer")
    reason: str = Field(default="", sa_type=Text)
    retry_at: float | None = None
    start_block: int = Field(sa_type=BigInteger)
    owner: str = Field(max_length=64)
    started_at: datetime = Field(sa_column=utc_column())
    finished_at: datetime | None = Field(
        default=None, sa_column=Column(UtcDateTime(), nullable=True)
    )


class ProtocolPauseRow(SQLModel, table=True):
    """A protocol the operator marked unsafe on a chain: agents leave it."""

    __tablename__ = "protocol_pauses"

    chain_id: int = Field(primary_key=True)
    protocol: str = Field(max_length=64, primary_key=True)
    paused_at: datetime = Field(sa_column=utc_column())


class PoolRiskRow(SQLModel, table=True):
    """One pool's risk guards: whether a loss excludes it until an operator clears it, the
    state and reasons it last showed, and its recent snapshots (``storage.risk``)."""

    __tablename__ = "pool_risks"

    chain_id: int = Field(primary_key=True)
    protocol: str = Field(max_length=64, primary_key=True)
    token: str = Field(max_length=42, primary_key=True)
    loss_excluded: bool = Field(default=False)
    cleared_at: int | None = Field(
        default=None, sa_type=BigInteger, description="chain time of the last clearing"
    )
    state: str = Field(default="ok", max_length=16)
    reasons: str = Field(default="[]", sa_type=Text, description="JSON list of sentences")
    peak_share_price: int = Field(
        default=0, sa_type=TokenAmount, description="highest share price since cleared"
    )
    history: str = Field(
        default="[]",
        sa_type=Text,
        sa_column_kwargs={"server_default": "[]"},
        description="JSON list of recent snapshots, for chains whose readings carry none",
    )


class IdempotencyKeyRow(SQLModel, table=True):
    """A partner's idempotency key: the request it was first sent with, and its outcome.

    ``in_progress`` while an attempt (``owner``) executes the call under a lease that it
    renews; ``completed`` once the response, or a refusal (4xx), is stored. The stored
    error is the gRPC code and message, the ``google.rpc.Status`` with its details, and
    the REST status and body, so a replay answers exactly as the first call did.
    """

    __tablename__ = "idempotency_keys"
    __table_args__ = (Index("ix_idempotency_keys_created_at", "created_at"),)

    partner_id: int = Field(foreign_key="partners.id", primary_key=True)
    key: str = Field(max_length=255, primary_key=True)
    method: str = Field(max_length=255, description="gRPC method path, /pkg.Service/Method")
    fingerprint: str = Field(max_length=64, description="SHA-256 of method and request, hex")
    state: str = Field(max_length=16, description="in_progress or completed")
    owner: str = Field(max_length=64, description="the attempt that executes or executed it")
    lease_until: float = Field(description="wall-clock unix time the owner's lease ends")
    response: bytes | None = Field(default=None, description="the serialized response")
    error_code: int | None = Field(default=None, description="gRPC status code of a refusal")
    error_message: str | None = Field(default=None, sa_type=Text)
    error_details: bytes | None = Field(default=None, description="the google.rpc.Status")
    rest_status: int | None = None
    rest_body: str | None = Field(default=None, sa_type=Text)
    created_at: datetime = Field(sa_column=utc_column())


# -- the operator's nonces -----------------------------------------------------------------


class ChainNonceRow(SQLModel, table=True):
    """The nonce counter of one sending address on one chain (``storage.nonces``):
    ``next_nonce`` was never handed out; ``holder`` made the latest reservation, whose
    lease runs until ``held_until``."""

    __tablename__ = "chain_nonces"

    chain_id: int = Field(primary_key=True)
    address: str = Field(max_length=42, primary_key=True)
    next_nonce: int = Field(sa_type=BigInteger)
    holder: str | None = Field(default=None, max_length=64)
    held_until: float = Field(description="wall-clock unix time the latest lease ends")


class ChainNonceLeaseRow(SQLModel, table=True):
    """A nonce handed out and not yet seen used on the chain: ``holder`` sends with it
    until ``held_until``; no holder means it was given back unsent."""

    __tablename__ = "chain_nonce_leases"

    chain_id: int = Field(primary_key=True)
    address: str = Field(max_length=42, primary_key=True)
    nonce: int = Field(sa_type=BigInteger, primary_key=True)
    holder: str | None = Field(default=None, max_length=64)
    held_until: float = Field(description="wall-clock unix time the lease ends")


# -- wallet events and their webhooks ------------------------------------------------------


class WalletEventRow(SQLModel, table=True):
    """An event of a wallet (``domain.books.events``), written in the same transaction as the
    change that makes it true. ``id`` grows with commit order: a partner's resume cursor."""

    __tablename__ = "wallet_events"
    __table_args__ = (
        Index("ix_wallet_events_wallet_id", "wallet_id", "id"),
        {"sqlite_autoincrement": True},
    )

    id: int | None = Field(
        default=None,
        primary_key=True,
        sa_type=BigInteger().with_variant(Integer(), "sqlite"),
    )
    wallet_id: int = Field(foreign_key="wallets.id")
    partner_id: int = Field(foreign_key="partners.id", index=True)
    chain_id: int
    wallet: str = Field(max_length=42, description="the smart account's address")
    kind: str = Field(max_length=32)
    amount: int | None = Field(default=None, sa_type=TokenAmount)
    data: str = Field(sa_type=Text, description="JSON of the kind's details")
    created_at: datetime = Field(sa_column=utc_column())


class PartnerWebhookRow(SQLModel, table=True):
    """Where a partner's events are posted, and the secret that signs them (encrypted)."""

    __tablename__ = "partner_webhooks"

    partner_id: int = Field(foreign_key="partners.id", primary_key=True)
    url: str = Field(sa_type=Text)
    secret: str = Field(sa_type=Text, description="the signing secret, sealed (webhooks.secrets)")
    updated_at: datetime = Field(sa_column=utc_column())


class WebhookDeliveryRow(SQLModel, table=True):
    """One event to post to one partner's webhook, until the receiver accepts it.

    Created with the event (the same transaction) when the partner has a webhook.
    ``delivered_at`` is set on the first 2xx; until then each attempt records its outcome
    and the time of the next one. ``dead_at`` is set instead when an attempt fails after the
    event is older than the dead-letter time: it is not tried again. The delivery job
    leases a row while it posts it.
    """

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("event_id", "partner_id", name="uq_webhook_deliveries_event"),
        Index("ix_webhook_deliveries_pending", "delivered", "wallet_id", "event_id"),
        Index("ix_webhook_deliveries_partner", "partner_id", "event_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    event_id: int = Field(sa_type=BigInteger, foreign_key="wallet_events.id")
    partner_id: int = Field(foreign_key="partners.id")
    wallet_id: int = Field(foreign_key="wallets.id")
    delivered: bool = False
    attempts: int = 0
    next_attempt_at: float = Field(description="wall-clock unix time of the next attempt")
    lease_owner: str | None = Field(default=None, max_length=64)
    lease_until: float | None = None
    last_status: int | None = Field(default=None, description="HTTP status of the last attempt")
    last_error: str = Field(default="", sa_type=Text)
    delivered_at: datetime | None = Field(
        default=None, sa_column=Column(UtcDateTime(), nullable=True)
    )
    created_at: datetime = Field(sa_column=utc_column())
    dead_at: datetime | None = Field(default=None, sa_column=Column(UtcDateTime(), nullable=True))


# -- chain totals (domain.books.aggregates) ------------------------------------------------------


class ChainTotalsRow(SQLModel, table=True):
    """One stripe of a chain's totals (``domain.books.aggregates``) for one token (``protocol``
    empty: every holding wallet of the token) or for one token in one protocol, changed in
    the transaction of every commit that changes them. A key's totals are the sum of its
    stripes; a wallet writes stripe ``id % STRIPES``. Protocol rows use ``wallets`` and
    ``amount`` only."""

    __tablename__ = "chain_totals"

    chain_id: int = Field(primary_key=True)
    token: str = Field(max_length=42, primary_key=True)
    protocol: str = Field(max_length=64, primary_key=True, description="'': the whole token")
    stripe: int = Field(primary_key=True)
    wallets: int = Field(sa_type=BigInteger, description="holding (not deactivated) wallets")
    amount: int = Field(sa_type=TokenAmount, description="what they hold (there)")
    active_wallets: int = Field(sa_type=BigInteger)
    apr_units: int = Field(sa_type=TokenAmount, description="Σ APR of the active, in 2**-128")
    deposited: int = Field(sa_type=TokenAmount)
    first_wallets: int = Field(sa_type=BigInteger)
    first_deposited: int = Field(sa_type=TokenAmount)
    transactions: int = Field(sa_type=BigInteger)


class PoolYieldRow(SQLModel, table=True):
    """One pool's yield at one moment of chain time, as the service read the market
    (``storage.yields``); kept for a bounded time."""

    __tablename__ = "pool_yields"
    __table_args__ = (Index("ix_pool_yields_pool_at", "chain_id", "protocol", "token", "at"),)

    id: int | None = Field(default=None, primary_key=True)
    chain_id: int
    protocol: str = Field(max_length=64)
    token: str = Field(max_length=42)
    at: int = Field(sa_type=BigInteger, description="chain time, unix seconds")
    supply: int = Field(sa_type=TokenAmount, description="what the pool held")
    borrows: int = Field(sa_type=TokenAmount, description="what it lent out")
    apy_base: float = Field(description="interest's yearly yield, percent")
    apy_rewards: float | None = Field(default=None, description="rewards' yearly yield, percent")


# -- the operator module's admin changes (domain.books.module_changes) ---------------------------


class ModuleChangeRow(SQLModel, table=True):
    """A change a chain's operator module's admin proposed, by its log's place; pending
    until a later ``ChangeApplied`` or ``ChangeCancelled`` of its id resolves it."""

    __tablename__ = "module_changes"
    __table_args__ = (Index("ix_module_changes_pending", "chain_id", "state", "change_id"),)

    chain_id: int = Field(primary_key=True)
    block: int = Field(sa_type=BigInteger, primary_key=True)
    log_index: int = Field(primary_key=True)
    module: str = Field(max_length=42)
    change_id: str = Field(max_length=66)
    kind: str = Field(max_length=16)
    subject: str = Field(max_length=42)
    selector: str = Field(max_length=10)
    new_value: str = Field(max_length=42)
    proposed_at: datetime = Field(sa_column=utc_column())
    effective_at: datetime = Field(sa_column=utc_column())
    state: str = Field(max_length=16, description="pending, applied or cancelled")
    resolved_block: int | None = Field(default=None, sa_type=BigInteger)


class ModuleChangeCursorRow(SQLModel, table=True):
    """How far a chain's module change logs are read: the first block not read yet."""

    __tablename__ = "module_change_cursors"

    chain_id: int = Field(primary_key=True)
    next_block: int = Field(sa_type=BigInteger)


# -- the per-wallet money call limit (domain.partners.money_calls) --------------------------


class WalletMoneyCallRow(SQLModel, table=True):
    """A money call a partner made on a wallet, kept for the limit's window (a minute)."""

    __tablename__ = "wallet_money_calls"
    __table_args__ = (
        Index("ix_wallet_money_calls_wallet", "partner_id", "chain_id", "wallet", "at"),
        Index("ix_wallet_money_calls_at", "at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    partner_id: int
    chain_id: int
    wallet: str = Field(max_length=42, description="the wallet's address, lower-cased")
    at: float = Field(description="wall-clock unix time of the call")


# -- the fleet-wide log watches (chain.web3.watch) ---------------------------------------


class ChainWatchCursorRow(SQLModel, table=True):
    """How far a chain's fleet-wide log watch is read: the first block not read yet."""

    __tablename__ = "chain_watch_cursors"

    chain_id: int = Field(primary_key=True)
    watch: str = Field(primary_key=True, max_length=32)
    next_block: int = Field(sa_type=BigInteger)
