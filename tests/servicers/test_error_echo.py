"""Errors echo input, cut short: they travel in metadata, whose size is limited."""

from __future__ import annotations

import json

from google.rpc import error_details_pb2, status_pb2

from yieldagent.domain import errors as domain
from yieldagent.servicers.errors import MAX_VIOLATIONS, grpc_status, rest_body, shorten
from yieldagent.servicers.method_policy import load_policies

OPTIMIZE = load_policies()["/yieldagent.v1.OptimizerService/Optimize"]
NAME = "x" * 100_000


def _metadata_size(error: domain.YieldAgentError) -> int:
    return sum(len(value) for _, value in grpc_status(error).trailing_metadata)


def test_short_texts_are_left_whole() -> None:
    assert shorten("Invalid protocol name: nope") == "Invalid protocol name: nope"
    assert shorten("a" * 301) == "a" * 301


def test_long_texts_keep_their_head_and_tail() -> None:
    cut = shorten(f"Invalid protocol name: {NAME}; protocols for USDC: aave, compound")
    assert len(cut) == 301
    assert cut.startswith("Invalid protocol name: xxx")
    assert cut.endswith("xxx; protocols for USDC: aave, compound")
    assert "…" in cut


def test_a_100_kb_echo_makes_a_small_rest_body_and_grpc_status() -> None:
    error = domain.InvalidRequest(f"Invalid protocol name: {NAME}")
    assert len(rest_body(error, OPTIMIZE)) < 400
    assert len(grpc_status(error).details) < 400
    assert _metadata_size(error) < 2_000


def test_echoed_field_names_and_messages_are_cut_and_fields_are_capped() -> None:
    error = domain.InvalidInput(
        [
            domain.FieldViolation(("current_allocations", f"{NAME}{i}"), f"bad {NAME}", "x")
            for i in range(50)
        ]
    )
    detail = json.loads(rest_body(error, OPTIMIZE))["detail"]
    assert len(detail) == MAX_VIOLATIONS
    assert detail[0]["loc"][:2] == ["body", "current_allocations"]
    assert len(detail[0]["loc"][2]) == 301
    assert len(detail[0]["msg"]) == 301
    assert _metadata_size(error) < 20_000

    [packed] = [
        value
        for key, value in grpc_status(error).trailing_metadata
        if key == "grpc-status-details-bin"
    ]
    assert isinstance(packed, bytes)
    [any_detail] = [
        d
        for d in status_pb2.Status.FromString(packed).details
        if d.Is(error_details_pb2.BadRequest.DESCRIPTOR)
    ]
    bad_request = error_details_pb2.BadRequest()
    any_detail.Unpack(bad_request)
    assert len(bad_request.field_violations) == MAX_VIOLATIONS
    assert all(len(v.description) == 301 for v in bad_request.field_violations)
