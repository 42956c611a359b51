"""Partner credentials: authentication, API keys, digests and partner names."""

from __future__ import annotations

import hashlib
import re
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.domain.errors import AccessDenied, AuthenticationFailed, InvalidRequest
from yieldagent.domain.partners.partners import (
    INVALID_KEY,
    PERMISSIONS,
    authenticate,
    check_partner_name,
    key_digest,
    new_api_key,
    rotation,
)
from yieldagent.domain.ports.credentials import Partner, StoredCredentials

KEY = "ya_correct-horse-battery-staple"
ACME = Partner(id=7, name="acme", active=True, permissions=PERMISSIONS)
T0 = 1_767_225_600.0


def NOW() -> float:  # a clock standing still
    return T0


def _stored(partner: Partner = ACME, key: str = KEY) -> StoredCredentials:
    return StoredCredentials(partner, key_digest(key))


def test_the_right_key_authenticates_the_partner() -> None:
    assert authenticate(_stored(), KEY, "accounts", NOW) is ACME


@pytest.mark.parametrize("permission", sorted(PERMISSIONS))
def test_each_granted_permission_is_allowed(permission: str) -> None:
    assert authenticate(_stored(), KEY, permission, NOW) == ACME


@pytest.mark.parametrize(
    ("stored", "presented"),
    [
        pytest.param(_stored(), KEY + "x", id="wrong key"),
        pytest.param(_stored(), "", id="empty key"),
        pytest.param(_stored(), None, id="missing key"),
        pytest.param(None, KEY, id="unknown partner"),
        pytest.param(None, None, id="unknown partner, no key"),
        pytest.param(_stored(), key_digest(KEY), id="the digest itself"),
    ],
)
def test_bad_credentials_fail_authentication(
    stored: StoredCredentials | None, presented: str | None
) -> None:
    with pytest.raises(AuthenticationFailed) as caught:
        authenticate(stored, presented, "accounts", NOW)
    assert caught.value.detail == INVALID_KEY == "Invalid or missing API key"


def test_an_unknown_partner_gives_the_same_answer_as_a_wrong_key() -> None:
    with pytest.raises(AuthenticationFailed) as unknown:
        authenticate(None, KEY, "wallets", NOW)
    with pytest.raises(AuthenticationFailed) as wrong:
        authenticate(_stored(), "ya_wrong", "wallets", NOW)
    assert str(unknown.value) == str(wrong.value)


def test_a_key_stored_as_the_empty_string_digest_is_not_an_empty_password() -> None:
    # Whatever storage holds, an absent key never authenticates.
    stored = StoredCredentials(ACME, key_digest(""))
    with pytest.raises(AuthenticationFailed):
        authenticate(stored, "", "accounts", NOW)
    with pytest.raises(AuthenticationFailed):
        authenticate(stored, None, "accounts", NOW)


def test_a_disabled_partner_is_denied_even_with_the_right_key() -> None:
    disabled = Partner(id=7, name="acme", active=False, permissions=PERMISSIONS)
    with pytest.raises(AccessDenied, match="inactive"):
        authenticate(_stored(disabled), KEY, "accounts", NOW)


def test_a_disabled_partner_with_a_wrong_key_fails_authentication_first() -> None:
    disabled = Partner(id=7, name="acme", active=False, permissions=PERMISSIONS)
    with pytest.raises(AuthenticationFailed):
        authenticate(_stored(disabled), "ya_wrong", "accounts", NOW)


def test_a_missing_permission_is_denied() -> None:
    wallets_only = Partner(id=7, name="acme", active=True, permissions=frozenset({"wallets"}))
    assert authenticate(_stored(wallets_only), KEY, "wallets", NOW) == wallets_only
    with pytest.raises(AccessDenied) as caught:
        authenticate(_stored(wallets_only), KEY, "optimizer", NOW)
    assert "optimizer" in caught.value.detail
    assert not isinstance(caught.value, AuthenticationFailed)


def test_new_api_keys_are_unique_prefixed_and_of_fixed_length() -> None:
    keys = [new_api_key() for _ in range(200)]
    assert len(set(keys)) == len(keys)
    for key in keys:
        assert key.startswith("ya_")
        # 32 random bytes in unpadded URL-safe base64 are 43 characters.
        assert re.fullmatch(r"ya_[A-Za-z0-9_-]{43}", key), key


def test_a_new_key_authenticates_against_its_own_digest_only() -> None:
    first, second = new_api_key(), new_api_key()
    assert authenticate(_stored(key=first), first, "rewards", NOW) == ACME
    with pytest.raises(AuthenticationFailed):
        authenticate(_stored(key=first), second, "rewards", NOW)


@given(key=st.text())
def test_key_digest_is_the_deterministic_sha256_hex_of_the_key(key: str) -> None:
    digest = key_digest(key)
    assert digest == key_digest(key)
    assert digest == hashlib.sha256(key.encode()).hexdigest()
    assert re.fullmatch(r"[0-9a-f]{64}", digest)


@given(a=st.text(), b=st.text())
def test_different_keys_have_different_digests(a: str, b: str) -> None:
    assert (key_digest(a) == key_digest(b)) == (a == b)


NAME_CHARS = string.ascii_lowercase + string.digits + "_.-"


@given(name=st.from_regex(r"[a-z0-9][a-z0-9_.-]{1,62}", fullmatch=True))
def test_valid_partner_names_are_accepted(name: str) -> None:
    assert check_partner_name(name) == name


@pytest.mark.parametrize("name", ["ab", "a1", "0x", "acme", "acme-corp.eu_2", "a" * 63])
def test_example_partner_names_are_accepted(name: str) -> None:
    assert check_partner_name(name) == name


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("", id="empty"),
        pytest.param("a", id="one character"),
        pytest.param("a" * 64, id="64 characters"),
        pytest.param("Acme", id="upper case"),
        pytest.param("-acme", id="leading dash"),
        pytest.param("_acme", id="leading underscore"),
        pytest.param(".acme", id="leading dot"),
        pytest.param("ac me", id="space"),
        pytest.param("acme\n", id="trailing newline"),
        pytest.param("acmé", id="non-ASCII letter"),
        pytest.param("ac/me", id="slash"),
        pytest.param("ac:me", id="colon"),
    ],
)
def test_invalid_partner_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidRequest, match="2 to 63 characters"):
        check_partner_name(name)


@given(name=st.text(min_size=2, max_size=63).filter(lambda s: any(c not in NAME_CHARS for c in s)))
def test_names_with_any_other_character_are_refused(name: str) -> None:
    with pytest.raises(InvalidRequest):
        check_partner_name(name)


# -- rotation with a grace period ----------------------------------------------------------

OLD, NEW = "ya_old-key", "ya_new-key"


def _rotated(grace: float) -> StoredCredentials:
    rotated = rotation(key_digest(OLD), NEW, grace, T0)
    return StoredCredentials(
        ACME, rotated.key_digest, rotated.previous_digest, rotated.previous_expires_at
    )


def test_during_the_grace_period_both_keys_work() -> None:
    stored = _rotated(grace=60)
    assert authenticate(stored, NEW, "wallets", lambda: T0) == ACME
    assert authenticate(stored, OLD, "wallets", lambda: T0 + 59.9) == ACME


def test_after_the_grace_period_the_old_key_is_refused() -> None:
    stored = _rotated(grace=60)
    with pytest.raises(AuthenticationFailed, match=INVALID_KEY):
        authenticate(stored, OLD, "wallets", lambda: T0 + 60)
    assert authenticate(stored, NEW, "wallets", lambda: T0 + 10**6) == ACME


def test_no_grace_ends_the_old_key_at_once_and_reads_no_clock() -> None:
    stored = _rotated(grace=0)
    assert stored.previous_digest is None and stored.previous_expires_at is None

    def no_clock() -> float:
        raise AssertionError("the clock is read only when a previous key exists")

    with pytest.raises(AuthenticationFailed):
        authenticate(stored, OLD, "wallets", no_clock)
    assert authenticate(stored, NEW, "wallets", no_clock) == ACME


def test_the_previous_key_still_needs_an_active_partner_with_the_permission() -> None:
    stored = _rotated(grace=60)
    limited = StoredCredentials(
        Partner(7, "acme", True, frozenset({"wallets"})),
        stored.key_digest,
        stored.previous_digest,
        stored.previous_expires_at,
    )
    with pytest.raises(AccessDenied):
        authenticate(limited, OLD, "rewards", lambda: T0)


def test_a_negative_grace_is_refused() -> None:
    with pytest.raises(InvalidRequest, match="cannot be negative"):
        rotation(key_digest(OLD), NEW, -1, T0)
