"""Authentication remembers refused credentials: repeating them costs no lookup, and the
answer is always the one a fresh lookup would give."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.domain.errors import AccessDenied, AuthenticationFailed
from yieldagent.domain.partners.partners import authenticate, key_digest
from yieldagent.domain.ports.credentials import Partner, StoredCredentials
from yieldagent.servicers.auth import Authenticator, RefusedCredentials

KEY = "ya_the-right-key"


@dataclass
class CountingPartners:
    """One partner, ``acme``, whose credentials lookups are counted."""

    stored: StoredCredentials = field(
        default_factory=lambda: StoredCredentials(
            Partner(1, "acme", True, frozenset({"wallets"})), key_digest(KEY)
        )
    )
    lookups: int = 0
    threads: list[int] = field(default_factory=list)

    def credentials(self, name: str) -> StoredCredentials | None:
        self.lookups += 1
        self.threads.append(threading.get_ident())
        return self.stored if name == "acme" else None


def _headers(name: str, key: str) -> list[tuple[str, str | bytes]]:
    return [("x-partner-name", name), ("x-partner-api-key", key)]


def test_repeated_refusals_cost_one_lookup() -> None:
    partners = CountingPartners()
    authenticator = Authenticator(partners)
    for name in ("acme", "nobody"):
        for _ in range(50):
            with pytest.raises(AuthenticationFailed):
                asyncio.run(authenticator.authenticate(_headers(name, "ya_wrong"), "wallets"))
    assert partners.lookups == 2


def test_successes_and_disabled_partners_are_looked_up_every_time() -> None:
    partners = CountingPartners()
    authenticator = Authenticator(partners)
    assert asyncio.run(authenticator.authenticate(_headers("acme", KEY), "wallets")).name == "acme"
    partners.stored = replace(
        partners.stored, partner=replace(partners.stored.partner, active=False)
    )
    with pytest.raises(AccessDenied):
        asyncio.run(authenticator.authenticate(_headers("acme", KEY), "wallets"))
    partners.stored = replace(
        partners.stored, partner=replace(partners.stored.partner, active=True)
    )
    assert asyncio.run(authenticator.authenticate(_headers("acme", KEY), "wallets")).name == "acme"
    assert partners.lookups == 3


def test_missing_credentials_need_no_lookup() -> None:
    partners = CountingPartners()
    authenticator = Authenticator(partners)
    for headers in ([], [("x-partner-name", "acme")], [("x-partner-api-key", KEY)]):
        with pytest.raises(AuthenticationFailed):
            asyncio.run(authenticator.authenticate(headers, "wallets"))
    assert partners.lookups == 0


def test_refused_credentials_are_bounded_and_age_out() -> None:
    now = [0.0]
    refused = RefusedCredentials(size=3, ttl=10.0, clock=lambda: now[0])
    for n in range(5):
        refused.add("acme", f"ya_{n}")
    assert len(refused) == 3
    assert not refused.holds("acme", "ya_0") and refused.holds("acme", "ya_4")
    now[0] = 10.0
    assert not refused.holds("acme", "ya_4")
    assert len(refused) == 2


_PRESENT = st.tuples(st.sampled_from(["acme", "nobody"]), st.integers(0, 5))


@given(st.lists(st.one_of(st.just("rotate"), _PRESENT), max_size=40))
def test_the_answer_is_always_a_fresh_lookups(steps: list[Any]) -> None:
    """Partners rotate to keys nobody presented before (as random keys are); clients
    present any key made so far, or a wrong one: the remembered refusals never change
    an answer."""
    partners = CountingPartners()
    authenticator = Authenticator(partners)
    made = [KEY]
    for step in steps:
        if step == "rotate":
            made.append(f"ya_made-{len(made)}")
            partners.stored = replace(partners.stored, key_digest=key_digest(made[-1]))
            continue
        name, pick = step
        presented = made[pick] if pick < len(made) else "ya_wrong"
        stored = partners.stored if name == "acme" else None
        assert _fresh(stored, presented) == _remembered(authenticator, name, presented)


def _fresh(stored: StoredCredentials | None, key: str) -> str:
    try:
        return authenticate(stored, key, "wallets", lambda: 0.0).name
    except AuthenticationFailed:
        return "refused"


def _remembered(authenticator: Authenticator, name: str, key: str) -> str:
    try:
        return asyncio.run(authenticator.authenticate(_headers(name, key), "wallets")).name
    except AuthenticationFailed:
        return "refused"


async def test_the_key_lookup_runs_off_the_event_loop() -> None:
    """The lookup is a database query: on the loop's thread it would stall every call
    the process serves for as long as the database takes."""
    partners = CountingPartners()
    authenticator = Authenticator(partners)
    assert (await authenticator.authenticate(_headers("acme", KEY), "wallets")).name == "acme"
    with pytest.raises(AuthenticationFailed):
        await authenticator.authenticate(_headers("nobody", KEY), "wallets")
    assert len(partners.threads) == 2
    assert threading.get_ident() not in partners.threads
