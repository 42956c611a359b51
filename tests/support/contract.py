"""What the contract tests share: schemathesis' conformance checks, their request report,
and the warning that names the documented statuses they did not provoke."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

# The loader's modules, which schemathesis imports only when a document is first loaded,
# are imported here, at collection, before any test leaves garbage behind: pytest rewrites
# their asserts as it imports them, and CPython 3.11's AST constructor fails with
# "recursion depth mismatch" when a finalizer the collector runs meanwhile raises
# (python/cpython#106905), as an earlier test's unclosed client session may.
import schemathesis.specs.openapi.schemas  # noqa: F401
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi import checks

CONFORMANCE = [
    not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
]
"""No 5xx; status, content type, headers and body as the document says."""

REPORT_PROPERTY = "schemathesis_requests"
"""The user property (``{label: {status: count}}``) that tests/rest/conftest.py sums up."""


def record(record_property: Any, answered: Mapping[str, Counter[int]]) -> None:
    """Hands the statuses answered per operation to the session summary (xdist-safe)."""
    record_property(
        REPORT_PROPERTY, {label: dict(statuses) for label, statuses in answered.items()}
    )


class UnprovokedStatuses(UserWarning):
    """Documented statuses that no contract test provoked: listed in the test summary for
    review (tests/rest/test_contract_flow.py)."""
