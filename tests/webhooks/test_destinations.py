"""Where a webhook may be set and posted: the URL checked when the operator sets it (its
host resolved), and aiohttp's resolver that judges every address before a connection."""

from __future__ import annotations

import socket

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from yieldagent.domain.errors import InvalidInput
from yieldagent.webhooks.destinations import (
    DestinationPolicy,
    GuardedResolver,
    RefusedDestination,
    check_destination,
    url_refusal,
)

PRODUCTION = DestinationPolicy(https_only=True)
LOCAL = DestinationPolicy(allow_loopback=True)


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost/hooks",  # a name: resolved, and it resolves to loopback
        "http://127.0.0.1:8081/hooks",
        "http://[::1]/hooks",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "https://10.0.0.8/hooks",
        "https://192.168.1.20/hooks",
        "https://[fd00::1]/hooks",
        "https://0.0.0.0/hooks",
        "https://host.invalid/hooks",  # resolves to nothing (RFC 6761)
    ],
)
def test_a_url_that_reaches_no_public_address_is_refused_when_set(url: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_destination(url, DestinationPolicy())
    [violation] = refused.value.violations
    assert violation.loc == ("url",) and violation.type == "url_destination"


def test_production_refuses_http_and_development_may_allow_loopback() -> None:
    with pytest.raises(InvalidInput, match="https"):
        check_destination("http://93.184.216.34/hooks", PRODUCTION)
    assert check_destination("https://93.184.216.34/hooks", PRODUCTION)
    assert check_destination("http://127.0.0.1:8081/hooks", LOCAL)
    assert check_destination("http://localhost:8081/hooks", LOCAL)
    with pytest.raises(InvalidInput, match="link-local"):
        check_destination("http://169.254.169.254/", LOCAL)


def test_an_address_in_the_url_is_judged_before_any_resolution() -> None:
    assert url_refusal("https://partner.example/h", DestinationPolicy()) is None
    assert "loopback" in (url_refusal("http://127.0.0.1/h", DestinationPolicy()) or "")
    assert url_refusal("http://127.0.0.1/h", LOCAL) is None
    assert "https" in (url_refusal("http://partner.example/h", PRODUCTION) or "")


class Answers(AbstractResolver):
    """A resolver that answers the given addresses for every name."""

    def __init__(self, *addresses: str) -> None:
        self.addresses = addresses
        self.closed = False

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(hostname=host, host=address, port=port, family=family, proto=0, flags=0)
            for address in self.addresses
        ]

    async def close(self) -> None:
        self.closed = True


async def test_the_resolver_returns_only_checked_addresses() -> None:
    """What the connection is made to is what was judged: public answers pass as they are;
    one refused answer among public ones refuses the name (a rebinding name cannot slip
    a private address in)."""
    public = Answers("93.184.216.34", "2606:2800:220:1::1")
    found = await GuardedResolver(DestinationPolicy(), public).resolve("partner.example", 443)
    assert [result["host"] for result in found] == list(public.addresses)

    for answers in (
        Answers("169.254.169.254"),
        Answers("93.184.216.34", "10.0.0.1"),
        Answers("::ffff:127.0.0.1"),
        Answers(),
    ):
        with pytest.raises(RefusedDestination, match=r"partner\.example"):
            await GuardedResolver(DestinationPolicy(), answers).resolve("partner.example", 443)

    loopback = Answers("127.0.0.1")
    guarded = GuardedResolver(LOCAL, loopback)
    assert [r["host"] for r in await guarded.resolve("localhost", 80)] == ["127.0.0.1"]
    await guarded.close()
    assert loopback.closed


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "127.1", "[0:0:0:0:0:ffff:7f00:1]"])
def test_other_spellings_of_loopback_are_refused(host: str) -> None:
    """Integer, hex and short IPv4 forms, which resolvers read as addresses, and a long
    IPv4-mapped form: judged by the address they reach."""
    with pytest.raises(InvalidInput, match=r"127\.0\.0\.1 is a loopback address") as refused:
        check_destination(f"http://{host}/hooks", DestinationPolicy())
    assert "Errno" not in str(refused.value)
