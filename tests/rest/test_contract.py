"""Contract tests: schemathesis calls every operation of the served OpenAPI document.

The document comes from the live edge (``GET /api/v1/openapi.json``) and the calls go
through Envoy to the real service. Every response must conform to the document (its
status, content type, headers and body) and none may be a 5xx. Calls go with a real
partner's key, and without any: the service must then refuse the guarded operations.

Invalid requests include schemathesis' own: a keyed case may go out without one of the
partner headers, which the service must refuse with 401. After a guarded call succeeds,
``ignored_auth`` probes it again without the key and with a wrong one (at most once per
operation and test); the summary counts the tests' own calls only.

Each operation gets ``YIELDAGENT_CONTRACT_EXAMPLES`` generated cases per test (a few
by default; ``make fuzz`` runs many more). The requests made per operation, by status,
are printed at the end of the session (tests/rest/conftest.py). Generated cases reach
each status by chance: tests/rest/test_contract_flow.py provokes every documented one on
purpose, and names in the test summary those it cannot.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import APIOperation, GenerationMode
from schemathesis.specs.openapi import checks

from support.contract import CONFORMANCE, record
from support.funded import USDC, Funded
from support.service import RunningService

ROOT = Path(__file__).resolve().parents[2]
CHAIN_ID = 8453
EXAMPLES = int(os.environ.get("YIELDAGENT_CONTRACT_EXAMPLES", "8"))

Operation = APIOperation[Any, Any, Any, Any]
Case = schemathesis.Case[Operation]


@pytest.fixture(scope="module")
def contract_schema(api: RunningService) -> Any:
    """The document the edge serves; the edge is the base URL."""
    return schemathesis.openapi.from_url(f"http://127.0.0.1:{api.http_port}/api/v1/openapi.json")


_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)

# One test per operation of the committed document (the served one is the same file).
OPERATIONS = [
    f"{verb.upper()} {path}"
    for path, verbs in json.loads((ROOT / "envoy" / "openapi.json").read_text())["paths"].items()
    for verb in verbs
]


def _cases(operation: Operation, wallet: str | None) -> st.SearchStrategy[Case]:
    """Valid and invalid requests, half of them generated, half on real path values.

    Generated paths rarely name anything that exists; the other half keeps the path on
    Base, USDC and, with a key, the partner's activated ``wallet``, so that calls get
    past the lookups to the service's answers on real data.
    """
    known = {"chain_id": CHAIN_ID, "token": USDC, "wallet": wallet}
    fixed = {
        name: value
        for name, value in known.items()
        if value is not None and f"{{{name}}}" in operation.path
    }
    modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    strategies = [operation.as_strategy(generation_mode=mode) for mode in modes]
    if fixed:
        strategies += [
            operation.as_strategy(generation_mode=mode, path_parameters=fixed) for mode in modes
        ]
    return st.one_of(strategies)


@pytest.mark.parametrize("label", OPERATIONS)
def test_keyed_calls_conform(
    label: str, contract_schema: Any, activated: Funded, record_property: Any
) -> None:
    operation = contract_schema.find_operation_by_label(label)
    answered: dict[str, Counter[int]] = {f"keyed {label}": Counter()}
    guarded = bool(operation.definition.raw.get("security"))
    checked = CONFORMANCE + ([checks.ignored_auth] if guarded else [])

    @given(case=_cases(operation, activated.wallet))
    @_SETTINGS
    def call(case: Case) -> None:
        response = case.call_and_validate(headers=activated.headers, checks=checked)
        answered[f"keyed {label}"][response.status_code] += 1

    call()
    record(record_property, answered)


@pytest.mark.parametrize("label", OPERATIONS)
def test_keyless_calls_conform(label: str, contract_schema: Any, record_property: Any) -> None:
    operation = contract_schema.find_operation_by_label(label)
    answered: dict[str, Counter[int]] = {f"keyless {label}": Counter()}
    guarded = bool(operation.definition.raw.get("security"))

    @given(case=_cases(operation, None))
    @_SETTINGS
    def call(case: Case) -> None:
        response = case.call_and_validate(checks=CONFORMANCE)
        answered[f"keyless {label}"][response.status_code] += 1
        if guarded:  # refused: unauthenticated, or by the edge before it asks
            assert response.status_code in (401, 404, 422, 429), response.text

    call()
    record(record_property, answered)
