"""The rules of a partner's webhook URL."""

from __future__ import annotations

from urllib.parse import urlsplit

from yieldagent.domain.errors import InvalidInput

MAX_URL_LENGTH = 2048


def check_webhook_url(url: str) -> str:
    """``url`` if it can receive webhooks: an absolute http or https URL with a host, no
    fragment, at most 2048 printable ASCII characters; InvalidInput otherwise."""

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
    if parts.fragment:
        raise refuse("URL should have no fragment")
    return url
