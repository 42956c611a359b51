"""PartnerStore: keys are returned once and stored only as digests."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text

from yieldagent.domain.errors import InvalidRequest, NotFound
from yieldagent.domain.partners import PERMISSIONS, Partner, key_digest
from yieldagent.storage.partners import PartnerStore


def test_create_returns_a_key_that_is_stored_only_as_its_digest(
    engine: Engine, partner: tuple[Partner, str]
) -> None:
    created, key = partner
    with engine.connect() as connection:
        stored = connection.execute(text("SELECT api_key_digest FROM partners")).scalar_one()
    assert key not in stored
    assert stored == key_digest(key)
    assert created.permissions == PERMISSIONS and created.active


def test_duplicate_names_are_refused(partners: PartnerStore, partner: tuple[Partner, str]) -> None:
    with pytest.raises(InvalidRequest, match="already exists"):
        partners.create("acme", PERMISSIONS)


def test_rotate_replaces_the_digest(partners: PartnerStore, partner: tuple[Partner, str]) -> None:
    _, old_key = partner
    _, new_key = partners.rotate("acme")
    credentials = partners.credentials("acme")
    assert credentials is not None
    assert new_key != old_key
    assert credentials.key_digest == key_digest(new_key)


def test_disable_and_enable(partners: PartnerStore, partner: tuple[Partner, str]) -> None:
    assert not partners.disable("acme").active
    credentials = partners.credentials("acme")
    assert credentials is not None and not credentials.partner.active
    assert partners.enable("acme").active


def test_unknown_partners(partners: PartnerStore) -> None:
    assert partners.credentials("nobody") is None
    with pytest.raises(NotFound):
        partners.disable("nobody")


def test_permissions_are_checked(partners: PartnerStore) -> None:
    with pytest.raises(InvalidRequest, match="Unknown permissions: admin"):
        partners.create("acme", frozenset({"wallets", "admin"}))
    created, _ = partners.create("acme", frozenset({"wallets"}))
    assert created.permissions == {"wallets"}
