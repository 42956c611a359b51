"""PartnerStore: keys are returned once and stored only as digests."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import Engine, text

from yieldagent.domain.errors import AuthenticationFailed, InvalidRequest, NotFound
from yieldagent.domain.partners.partners import PERMISSIONS, key_digest
from yieldagent.domain.ports.credentials import Partner
from yieldagent.servicers.auth import Authenticator
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


class Clock:
    """Wall time the test moves."""

    def __init__(self) -> None:
        self.now = 1_767_225_600.0

    def __call__(self) -> float:
        return self.now


def _headers(name: str, key: str) -> list[tuple[str, str]]:
    return [("x-partner-name", name), ("x-partner-api-key", key)]


def test_rotation_with_grace_keeps_the_old_key_until_it_expires(
    engine: Engine, partner: tuple[Partner, str]
) -> None:
    clock = Clock()
    partners = PartnerStore(engine, now=clock)
    authenticator = Authenticator(partners, now=clock)
    _, old_key = partner
    _, new_key = partners.rotate("acme", grace_seconds=300)
    credentials = partners.credentials("acme")
    assert credentials is not None
    assert credentials.previous_digest == key_digest(old_key)
    assert credentials.previous_expires_at == clock.now + 300
    for key in (old_key, new_key):
        assert (
            asyncio.run(authenticator.authenticate(_headers("acme", key), "wallets")).name == "acme"
        )
    clock.now += 300
    with pytest.raises(AuthenticationFailed):
        asyncio.run(authenticator.authenticate(_headers("acme", old_key), "wallets"))
    assert (
        asyncio.run(authenticator.authenticate(_headers("acme", new_key), "wallets")).name == "acme"
    )


def test_a_second_rotation_keeps_only_the_latest_previous_key(
    engine: Engine, partner: tuple[Partner, str]
) -> None:
    clock = Clock()
    partners = PartnerStore(engine, now=clock)
    authenticator = Authenticator(partners, now=clock)
    _, first = partner
    _, second = partners.rotate("acme", grace_seconds=300)
    _, third = partners.rotate("acme", grace_seconds=60)
    with pytest.raises(AuthenticationFailed):
        asyncio.run(authenticator.authenticate(_headers("acme", first), "wallets"))
    assert (
        asyncio.run(authenticator.authenticate(_headers("acme", second), "wallets")).name == "acme"
    )
    _, fourth = partners.rotate("acme")  # no grace: every earlier key ends now
    for key in (second, third):
        with pytest.raises(AuthenticationFailed):
            asyncio.run(authenticator.authenticate(_headers("acme", key), "wallets"))
    assert (
        asyncio.run(authenticator.authenticate(_headers("acme", fourth), "wallets")).name == "acme"
    )
    with engine.connect() as connection:
        row = connection.execute(
            text("SELECT previous_key_digest, previous_key_expires_at FROM partners")
        ).one()
    assert tuple(row) == (None, None)


def test_rotating_an_unknown_partner_or_with_negative_grace_is_refused(
    partners: PartnerStore, partner: tuple[Partner, str]
) -> None:
    with pytest.raises(NotFound):
        partners.rotate("nobody", grace_seconds=10)
    with pytest.raises(InvalidRequest, match="negative"):
        partners.rotate("acme", grace_seconds=-1)
