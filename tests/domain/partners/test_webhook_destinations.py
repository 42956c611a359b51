"""Which addresses a webhook may reach: public unicast only, loopback when allowed, and
IPv6 forms that carry a refused IPv4 address judged as that address."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yieldagent.domain.errors import InvalidInput
from yieldagent.domain.partners.webhooks import check_webhook_url, embedded_ipv4, refusal

REFUSED = [
    "127.0.0.1",
    "127.255.255.254",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",  # cloud metadata
    "100.64.0.1",  # carrier-grade NAT
    "0.0.0.0",  # noqa: S104  (an address refused, not a bind)
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "192.0.2.1",  # documentation
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "fd12:3456::1",
    "ff02::1",
    "fec0::1",
    "::ffff:127.0.0.1",
    "::ffff:169.254.169.254",
    "::ffff:10.0.0.1",
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "2001:db8::1",
]
PUBLIC = ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8", "1.1.1.1"]


@pytest.mark.parametrize("address", REFUSED)
def test_private_and_special_addresses_are_refused(address: str) -> None:
    assert refusal(address) is not None


@pytest.mark.parametrize("address", PUBLIC)
def test_public_unicast_addresses_are_allowed(address: str) -> None:
    assert refusal(address) is None


@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"])
def test_loopback_is_allowed_only_when_the_operator_allows_it(address: str) -> None:
    assert "loopback" in (refusal(address) or "")
    assert refusal(address, allow_loopback=True) is None


@pytest.mark.parametrize("address", ["10.0.0.1", "169.254.169.254", "fe80::1", "0.0.0.0"])  # noqa: S104
def test_allowing_loopback_allows_nothing_else(address: str) -> None:
    assert refusal(address, allow_loopback=True) is not None


def test_a_name_is_not_an_address() -> None:
    assert refusal("partner.example") == "'partner.example' is not an IP address"


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_an_ipv4_address_and_its_mapped_ipv6_form_get_the_same_answer(value: int) -> None:
    v4 = IPv4Address(value)
    mapped = IPv6Address(f"::ffff:{v4}")
    assert embedded_ipv4(mapped) == v4
    assert refusal(mapped) == refusal(v4)
    assert refusal(mapped, True) == refusal(v4, True)


def test_production_urls_must_use_https() -> None:
    assert check_webhook_url("https://partner.example/h", https_only=True)
    assert check_webhook_url("http://partner.example/h") == "http://partner.example/h"
    with pytest.raises(InvalidInput) as refused:
        check_webhook_url("http://partner.example/h", https_only=True)
    assert "https" in refused.value.violations[0].msg
