"""The log handler's last guard: the configured secrets never reach a line."""

from __future__ import annotations

import io
import json
import logging

from yieldagent.config import load_settings, logged_secrets
from yieldagent.observability.logs import REDACTED, JsonFormatter, RedactingFilter

URL = "https://base.example/v2/path-api-key?token=query-api-key"


def _line(record_args: tuple[object, ...], **extra: object) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    settings = load_settings({"YIELDAGENT_RPC_URL_8453": URL})
    handler.addFilter(RedactingFilter(logged_secrets(settings)))
    logger = logging.getLogger("tests.redaction")
    logger.addHandler(handler)
    try:
        try:
            raise RuntimeError(f"the client failed on url={URL}")
        except RuntimeError:
            logger.error("disconnected from %s", *record_args, extra=extra, exc_info=True)
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


def test_a_nodes_url_is_redacted_from_the_message_the_fields_and_the_trace() -> None:
    line = _line((URL,), node="/v2/path-api-key", query="token=query-api-key")
    assert "path-api-key" not in line and "query-api-key" not in line
    entry = json.loads(line)
    assert entry["message"] == f"disconnected from {REDACTED}"
    assert entry["node"] == REDACTED and entry["query"] == REDACTED
    assert REDACTED in entry["exception"]


def test_without_secrets_a_line_is_left_as_it_is() -> None:
    record = logging.makeLogRecord({"msg": "at %s", "args": (URL,)})
    assert RedactingFilter(()).filter(record)
    assert record.getMessage() == f"at {URL}"
