"""What keeps webhook deliveries bounded and pointed outward: destinations refused at the
connection (a name that resolves to loopback, http in production), answers read to a
bound, disabled partners skipped, and deliveries that fail for too long ending dead."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest
from sqlalchemy import Engine

from support.wallet_setup import USDC, activated, make_lifecycle
from support.webhook_delivery import LOCAL, Clock, deliverer
from support.webhook_receiver import ENDLESS, Receiver
from yieldagent.chain.simulated.market import SimulatedMarket
from yieldagent.composition.compose import count_delivery
from yieldagent.domain.market.ports import MarketChain
from yieldagent.domain.ports.credentials import Partner
from yieldagent.observability.metrics import REGISTRY
from yieldagent.storage.events import EventStore
from yieldagent.storage.partners import PartnerStore
from yieldagent.storage.webhooks import WebhookStore
from yieldagent.webhooks.admin import delivery_log, set_webhook
from yieldagent.webhooks.delivery import DAY, DeliveryOutcome
from yieldagent.webhooks.destinations import DestinationPolicy
from yieldagent.webhooks.sealing import SecretBox

PartnerKey = tuple[Partner, str]


async def one_wallet(
    engine: Engine, market: SimulatedMarket, chains: dict[int, MarketChain], owner: Partner
) -> list[int]:
    """A wallet activated: its two events' ids."""
    wallet = await activated(make_lifecycle(engine, chains), engine, market, owner.id, USDC)
    return [event.id for event in EventStore(engine).after(wallet.id, 0, 10)]


@pytest.mark.parametrize(
    ("policy", "url", "reason"),
    [
        (DestinationPolicy(), "http://localhost:{port}/h", "resolves to a refused address"),
        (DestinationPolicy(), "http://127.0.0.1:{port}/h", "loopback"),
        (DestinationPolicy(), "http://[::ffff:127.0.0.1]:{port}/h", "loopback"),
        (DestinationPolicy(https_only=True, allow_loopback=True), "{url}", "https"),
    ],
)
async def test_a_refused_destination_is_never_posted_to(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
    receiver: Receiver,
    box: SecretBox,
    policy: DestinationPolicy,
    url: str,
    reason: str,
) -> None:
    """Set while it was allowed (as in development), refused when the deliverer's policy
    forbids it: at the connection for a name (resolved, then judged), before it for an
    address or a scheme. Each refusal is a failed attempt, retried like any other."""
    owner, _ = partner
    port = receiver.url.split(":")[2].split("/")[0]
    set_webhook(
        WebhookStore(engine), box, owner.name, url.format(port=port, url=receiver.url), LOCAL
    )
    await one_wallet(engine, market, chains, owner)
    outcomes: list[DeliveryOutcome] = []

    await deliverer(engine, box, Clock(), outcomes, policy, timeout_seconds=5).deliver_due()

    [refused] = outcomes
    assert not refused.delivered and not refused.dead and refused.status is None
    assert reason in refused.error
    assert receiver.received == []
    [_, entry] = delivery_log(WebhookStore(engine), owner.name, 10)["deliveries"]
    assert entry["attempt"] == 1 and reason in entry["error"]


async def test_an_answer_is_read_to_a_bound(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
    receiver: Receiver,
    box: SecretBox,
) -> None:
    """A receiver that answers 200 with a body that never ends: the status delivers, and
    the deliverer leaves without reading the rest (within its 5 s timeout, which reading
    it all would exceed)."""
    owner, _ = partner
    set_webhook(WebhookStore(engine), box, owner.name, receiver.url, LOCAL)
    first, second = await one_wallet(engine, market, chains, owner)
    receiver.script.append(ENDLESS)
    outcomes: list[DeliveryOutcome] = []

    await deliverer(engine, box, Clock(), outcomes, timeout_seconds=5).deliver_due()

    assert [(o.event_id, o.delivered, o.status) for o in outcomes] == [
        (first, True, 200),
        (second, True, 200),
    ]
    assert await asyncio.to_thread(receiver.abandoned.wait, 20)


async def test_a_disabled_partner_gets_no_deliveries_until_enabled(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
    receiver: Receiver,
    box: SecretBox,
) -> None:
    owner, _ = partner
    set_webhook(WebhookStore(engine), box, owner.name, receiver.url, LOCAL)
    events = await one_wallet(engine, market, chains, owner)
    PartnerStore(engine).disable(owner.name)
    outcomes: list[DeliveryOutcome] = []
    job = deliverer(engine, box, Clock(), outcomes, timeout_seconds=5)

    await job.deliver_due()
    assert outcomes == [] and receiver.received == []
    assert delivery_log(WebhookStore(engine), owner.name, 10)["pending"] == 2

    PartnerStore(engine).enable(owner.name)
    await job.deliver_due()
    assert [r.event_id for r in receiver.accepted()] == events


async def test_a_delivery_failing_past_the_dead_letter_time_ends_dead(
    engine: Engine,
    market: SimulatedMarket,
    chains: dict[int, MarketChain],
    partner: PartnerKey,
    receiver: Receiver,
    box: SecretBox,
) -> None:
    """Failing within 3 days of its event: retried. Failing after: dead, shown in the log
    and the metrics, no longer pending, and the wallet's next event goes out."""
    owner, _ = partner
    set_webhook(WebhookStore(engine), box, owner.name, receiver.url, LOCAL)
    first, second = await one_wallet(engine, market, chains, owner)
    receiver.script.extend([500, 503])
    clock = Clock()
    outcomes: list[DeliveryOutcome] = []
    job = deliverer(engine, box, clock, outcomes, timeout_seconds=5)
    dead_before = REGISTRY.get_sample_value(
        "yieldagent_webhook_deliveries_total", {"outcome": "dead"}
    )

    await job.deliver_due()
    clock.now += 3 * DAY
    await job.deliver_due()
    for outcome in outcomes:
        count_delivery(outcome)

    assert [(o.event_id, o.attempt, o.status, o.outcome) for o in outcomes] == [
        (first, 1, 500, "failed"),
        (first, 2, 503, "dead"),
        (second, 1, 200, "delivered"),
    ]
    log = delivery_log(WebhookStore(engine), owner.name, 10)
    assert log["pending"] == 0
    later, dead = log["deliveries"]
    assert (dead["event_id"], dead["attempt"], dead["status_code"]) == (first, 2, 503)
    assert dead["dead_at"] and dead["next_attempt_at"] is None and dead["delivered_at"] is None
    assert datetime.fromisoformat(dead["dead_at"])
    assert later["delivered_at"] and later["dead_at"] is None
    assert (
        REGISTRY.get_sample_value("yieldagent_webhook_deliveries_total", {"outcome": "dead"})
        == (dead_before or 0) + 1
    )

    clock.now += DAY
    await job.deliver_due()
    assert [r.event_id for r in receiver.received] == [first, first, second]  # never again
