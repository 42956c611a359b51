"""The operator's webhook commands: set a partner's webhook (a fresh secret each time, to a
destination the delivery job may post to), and read its delivery log."""

from __future__ import annotations

from typing import Any

from yieldagent.domain.errors import InvalidInput
from yieldagent.domain.partners.webhooks import check_webhook_url
from yieldagent.domain.ports.webhooks import WebhookRegistry
from yieldagent.webhooks.destinations import PUBLIC_ONLY, DestinationPolicy, check_destination
from yieldagent.webhooks.sealing import SecretBox, partner_context
from yieldagent.webhooks.signing import new_secret

MAX_LOG = 1000


def set_webhook(
    store: WebhookRegistry,
    box: SecretBox,
    name: str,
    url: str,
    policy: DestinationPolicy = PUBLIC_ONLY,
) -> dict[str, Any]:
    """Points the partner's events at ``url`` with a new signing secret; returns
    ``{name, url, secret}`` (the only time the secret is shown). The URL must be one the
    delivery job may post to now (``check_destination``): InvalidInput otherwise."""
    check_webhook_url(url, policy.https_only)
    partner_id = store.partner_id(name)
    check_destination(url, policy)
    secret = new_secret()
    store.set(partner_id, url, box.seal(secret, partner_context(partner_id)))
    return {"name": name, "url": url, "secret": secret}


def delivery_log(store: WebhookRegistry, name: str, limit: int) -> dict[str, Any]:
    """The partner's latest deliveries (1 to 1000), newest first, and how many still wait."""
    if not 1 <= limit <= MAX_LOG:
        raise InvalidInput.field(("limit",), f"Input should be from 1 to {MAX_LOG}", "range")
    partner_id = store.partner_id(name)
    webhook = store.get(partner_id)
    return {
        "name": name,
        "url": webhook.url if webhook else None,
        "pending": store.pending(partner_id),
        "deliveries": [entry.json() for entry in store.log(partner_id, limit)],
    }
