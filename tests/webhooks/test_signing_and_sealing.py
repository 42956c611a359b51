"""Webhook signatures, the backoff schedule, URL rules, and secrets sealed at rest."""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from pathlib import Path

import pytest

from support.webhook_receiver import verify
from yieldagent.domain.errors import InvalidInput
from yieldagent.domain.partners.webhooks import check_webhook_url
from yieldagent.webhooks.delivery import backoff
from yieldagent.webhooks.sealing import KEY_FILE, SecretBox, derive_key, load_box, partner_context
from yieldagent.webhooks.signing import new_secret, signature

BODY = b'{"id":1,"type":"activated"}'


def test_the_signature_is_hmac_sha256_of_timestamp_dot_body() -> None:
    secret = new_secret()
    header = signature(secret, 1_700_000_000, BODY)

    expected = hmac.new(secret.encode(), b"1700000000." + BODY, hashlib.sha256).hexdigest()
    assert header == f"t=1700000000,v1={expected}"
    assert verify(secret, header, BODY, now=1_700_000_100)


@pytest.mark.parametrize(
    ("header", "body", "now"),
    [
        (None, BODY + b" ", 1_700_000_000),  # the body changed
        (None, BODY, 1_700_000_301),  # too old: a replay
        ("t=1700000000,v1=00", BODY, 1_700_000_000),
        ("v1=abc", BODY, 1_700_000_000),
        ("t=soon,v1=abc", BODY, 1_700_000_000),
        ("", BODY, 1_700_000_000),
    ],
)
def test_a_receiver_refuses_what_the_secret_did_not_sign(
    header: str | None, body: bytes, now: float
) -> None:
    secret = new_secret()
    sent = header if header is not None else signature(secret, 1_700_000_000, BODY)
    assert not verify(secret, sent, body, now)


def test_secrets_are_fresh_and_long() -> None:
    secrets = {new_secret() for _ in range(50)}
    assert len(secrets) == 50
    assert all(s.startswith("whsec_") and len(s) == 6 + 64 for s in secrets)


@pytest.mark.parametrize("draw", [0.0, 0.5, 0.999])
def test_the_backoff_doubles_up_to_its_cap_with_jitter(draw: float) -> None:
    delays = [backoff(n, cap=10, draw=lambda: draw) for n in range(1, 8)]
    full = [1, 2, 4, 8, 10, 10, 10]
    assert delays == [f * (0.5 + 0.5 * draw) for f in full]
    assert all(f / 2 <= d <= f for d, f in zip(delays, full, strict=True))


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/x",
        "example.com/hooks",
        "https:///no-host",
        "https://example.com/x#frag",
        "https://exa mple.com/",
        "https://example.com:99999/",
        "https://exämple.com/",
        "",
        "https://example.com/" + "a" * 2048,
    ],
)
def test_a_webhook_url_must_be_absolute_http(url: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_webhook_url(url)
    assert refused.value.violations[0].loc == ("url",)


def test_a_plain_or_tls_url_with_port_path_and_query_is_fine() -> None:
    for url in ("http://127.0.0.1:8081/hooks", "https://partner.example/yieldagent?x=1"):
        assert check_webhook_url(url) == url


def test_a_sealed_secret_opens_only_with_its_key_and_partner() -> None:
    box = SecretBox(derive_key("correct horse"))
    sealed = box.seal("whsec_abc", partner_context(1))

    assert "whsec_abc" not in sealed and sealed != box.seal("whsec_abc", partner_context(1))
    assert box.open(sealed, partner_context(1)) == "whsec_abc"
    with pytest.raises(ValueError, match="MAC check failed"):
        box.open(sealed, partner_context(2))  # moved to another partner's row
    with pytest.raises(ValueError, match="MAC check failed"):
        SecretBox(derive_key("battery staple")).open(sealed, partner_context(1))


def test_without_a_configured_key_one_is_generated_once_and_kept_private(tmp_path: Path) -> None:
    sealed = load_box(None, tmp_path).seal("whsec_x", "c")

    assert load_box(None, tmp_path).open(sealed, "c") == "whsec_x"
    mode = stat.S_IMODE(os.stat(tmp_path / KEY_FILE).st_mode)
    assert mode == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == [KEY_FILE]
    with pytest.raises(ValueError, match="MAC check failed"):
        load_box("configured", tmp_path).open(sealed, "c")
