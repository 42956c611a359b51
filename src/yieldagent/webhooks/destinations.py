"""Where a webhook may be posted: the URL's scheme and every address its host resolves to.

The check runs twice. When the operator sets a webhook (``check_destination``), so a URL
that cannot be delivered to is refused at once. And on every connection the delivery job
opens (``GuardedResolver``, aiohttp's resolver): the host is resolved, every address is
judged by the domain's ``refusal``, and the connection is made to one of exactly those
addresses. A name that resolved to a public address when it was set and to
169.254.169.254 later (DNS rebinding) is refused at the connection, and nothing resolves
the name a second time between the check and the connect. A host that has any refused
address is refused whole, rather than tried on its other ones.
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from yieldagent.domain.errors import InvalidInput
from yieldagent.domain.partners.webhooks import check_webhook_url, refusal


@dataclass(frozen=True, slots=True)
class DestinationPolicy:
    """Which webhook destinations the service posts to (``YIELDAGENT_ENV``,
    ``YIELDAGENT_WEBHOOK_ALLOW_LOOPBACK``)."""

    https_only: bool = False
    """Refuse ``http`` URLs (production)."""
    allow_loopback: bool = False
    """Post to loopback addresses (a receiver on this machine: development and tests)."""


PUBLIC_ONLY = DestinationPolicy()
"""Public addresses over http or https: the policy when nothing else is said."""


class RefusedDestination(OSError):
    """A webhook's host resolves to an address the policy refuses (an OSError, as a failed
    resolution is, so aiohttp reports it as one)."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.EACCES, message)


def url_refusal(url: str, policy: DestinationPolicy) -> str | None:
    """Why ``url`` may not be posted to before any name is resolved (its scheme, or a host
    that is an IP address the policy refuses), or None."""
    parts = urlsplit(url)
    if policy.https_only and parts.scheme != "https":
        return "the URL must use https (the service runs in production)"
    host = parts.hostname or ""
    try:
        socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host.split("%")[0])
    except OSError:
        return None  # a name: judged by its addresses when it is resolved
    return refusal(host, policy.allow_loopback)


def _judge(host: str, addresses: list[str], policy: DestinationPolicy) -> None:
    if not addresses:
        raise RefusedDestination(f"{host} resolves to no address")
    for address in addresses:
        reason = refusal(address, policy.allow_loopback)
        if reason is not None:
            raise RefusedDestination(f"{host} resolves to a refused address: {reason}")


def check_destination(url: str, policy: DestinationPolicy) -> str:
    """``url`` if webhooks may be posted there now: a valid URL, https when required, and a
    host whose every address is allowed; InvalidInput otherwise (a host that does not
    resolve included)."""
    check_webhook_url(url, policy.https_only)

    def refuse(message: str) -> InvalidInput:
        return InvalidInput.field(("url",), message, "url_destination")

    reason = url_refusal(url, policy)
    if reason is not None:
        raise refuse(f"URL is refused: {reason}")
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        found = socket.getaddrinfo(host, parts.port or 443, type=socket.SOCK_STREAM)
    except OSError as failure:
        raise refuse(f"URL host {host!r} does not resolve: {failure}") from None
    try:
        _judge(host, sorted({str(info[4][0]) for info in found}), policy)
    except RefusedDestination as refused:
        raise refuse(f"URL is refused: {refused.strerror}") from None
    return url


class GuardedResolver(AbstractResolver):
    """aiohttp's resolver, refusing hosts that resolve to an address the policy refuses;
    the connection is made to an address it returned (checked), never to one resolved
    afterwards."""

    def __init__(self, policy: DestinationPolicy, inner: AbstractResolver | None = None) -> None:
        self._policy = policy
        self._inner = inner

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if self._inner is None:
            self._inner = DefaultResolver()
        found = await self._inner.resolve(host, port, family)
        _judge(host, [result["host"] for result in found], self._policy)
        return found

    async def close(self) -> None:
        if self._inner is not None:
            await self._inner.close()
