"""Structured logging: one JSON object per line on stderr.

Every ``extra={...}`` field of a log call becomes a key of the object. Nothing
secret is ever passed to a logger: API keys and private keys stay out of logs. As a last
guard, the handler replaces the secrets it is given (the nodes' URLs, which hold providers'
API keys) wherever a line would carry them, a library's line included.

A line logged while an API call is served carries that call's ``request_id`` (the
``x-request-id`` Envoy forwards, or the one the server made): ``servicers.interceptor``
sets it with ``bind_request_id`` for the duration of the call.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from typing import Any

_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}

_request_id: ContextVar[str | None] = ContextVar("request_id", default=None)


def bind_request_id(request_id: str) -> Token[str | None]:
    """Makes ``request_id`` the current call's id; returns a token for ``unbind_request_id``."""
    return _request_id.set(request_id)


def unbind_request_id(token: Token[str | None]) -> None:
    """Restores the request id that ``bind_request_id`` replaced."""
    _request_id.reset(token)


def current_request_id() -> str | None:
    """The id of the call being served, if any."""
    return _request_id.get()


class JsonFormatter(logging.Formatter):
    """Formats a record as a single-line JSON object."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat().replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD:
                entry[key] = value
        if record.exc_text:
            entry["exception"] = record.exc_text
        elif record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class RequestIdFilter(logging.Filter):
    """Stamps each record with the current call's ``request_id`` (when there is one).

    A handler's filters run in the context of the logging call, so the id is the one of
    the call that logged, whichever thread formats the record later.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = _request_id.get()
        if request_id is not None:
            record.request_id = request_id
        return True


REDACTED = "[redacted]"


class RedactingFilter(logging.Filter):
    """Replaces each of ``secrets`` in a record's message, fields and exception text."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self._secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))
        self._formatter = logging.Formatter()

    def _clean(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        message = record.getMessage()
        cleaned = self._clean(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        for key, value in list(vars(record).items()):
            if key not in _STANDARD and isinstance(value, str):
                setattr(record, key, self._clean(value))
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._clean(record.exc_text)
        return True


class TextFormatter(logging.Formatter):
    """Plain text, with ``[request_id=...]`` appended to lines logged during an API call."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        request_id = getattr(record, "request_id", None)
        return text if request_id is None else f"{text} [request_id={request_id}]"


def configure_logging(level: str = "INFO", fmt: str = "json", secrets: Iterable[str] = ()) -> None:
    """Sends the service's logs to stderr, as JSON lines or (fmt="text") plain text, with
    each of ``secrets`` replaced by ``[redacted]``."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    handler.addFilter(RequestIdFilter())
    handler.addFilter(RedactingFilter(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("alembic").setLevel(max(logging.WARNING, root.level))
