"""The rules of a partner's webhook URL, and of the addresses a webhook may reach.

A webhook is a request the service makes on a partner's behalf, so a URL that named an
address inside the operator's network (a database, a cloud metadata service at
169.254.169.254, the service's own admin port) would let a partner reach it. Only public
unicast addresses are allowed; loopback only when the operator allows it (development and
tests, with a receiver on the same machine). The adapter resolves the host and checks
every address it got with ``refusal`` before it connects to one of them.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address
from urllib.parse import urlsplit

from yieldagent.domain.errors import InvalidInput

MAX_URL_LENGTH = 2048

Address = IPv4Address | IPv6Address

_NAT64 = IPv6Network("64:ff9b::/96")
_SHARED = IPv4Network("100.64.0.0/10")  # carrier-grade NAT: not reachable from the internet


def check_webhook_url(url: str, https_only: bool = False) -> str:
    """``url`` if it can receive webhooks: an absolute https URL (or http, unless
    ``https_only``) with a host, no fragment, at most 2048 printable ASCII characters;
    InvalidInput otherwise."""

    def refuse(message: str) -> InvalidInput:
        return InvalidInput.field(("url",), message, "url_parsing")

    if not url or len(url) > MAX_URL_LENGTH:
        raise refuse(f"URL should have 1 to {MAX_URL_LENGTH} characters")
    if not url.isascii() or not url.isprintable() or " " in url:
        raise refuse("URL should be printable ASCII without spaces")
    parts = urlsplit(url)
    try:
        valid_port = parts.port is None or parts.port > 0
    except ValueError:
        valid_port = False
    if not valid_port:
        raise refuse("URL should have a port from 1 to 65535")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise refuse("URL should be absolute, with the http or https scheme and a host")
    if https_only and parts.scheme != "https":
        raise refuse("URL should use https (the service runs in production)")
    if parts.fragment:
        raise refuse("URL should have no fragment")
    return url


def embedded_ipv4(address: IPv6Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 one carries to an IPv4 host (IPv4-mapped, 6to4, NAT64),
    if any: such an address reaches that IPv4 host, so it is judged as that host."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return IPv4Address(int(address) & 0xFFFF_FFFF)
    return None


def refusal(address: Address | str, allow_loopback: bool = False) -> str | None:
    """Why a webhook may not be posted to ``address``, or None when it may: refused are
    loopback (unless ``allow_loopback``), private, link-local (169.254.169.254 included),
    shared (carrier-grade NAT), multicast, unspecified, reserved and documentation
    addresses, their IPv6 equivalents, and IPv6 forms that carry one of those IPv4
    addresses (``::ffff:127.0.0.1``)."""
    if isinstance(address, str):
        try:
            address = ip_address(address.split("%", 1)[0])
        except ValueError:
            return f"{address!r} is not an IP address"
    if isinstance(address, IPv6Address):
        inner = embedded_ipv4(address)
        if inner is not None:
            return refusal(inner, allow_loopback)
    if address.is_loopback:
        return None if allow_loopback else f"{address} is a loopback address"
    if address.is_unspecified:
        return f"{address} is unspecified"
    if address.is_link_local:
        return f"{address} is a link-local address"
    if address.is_multicast:
        return f"{address} is a multicast address"
    if isinstance(address, IPv6Address) and address.is_site_local:
        return f"{address} is a site-local address"
    if address.is_private or address.is_reserved or address in _SHARED:
        return f"{address} is a private or reserved address"
    if not address.is_global:
        return f"{address} is not a public address"
    return None
