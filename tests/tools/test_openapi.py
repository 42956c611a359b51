"""The OpenAPI document: generated from the protos, and saying what the method policies say."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eth_utils.address import to_checksum_address
from google.api import annotations_pb2
from google.protobuf import descriptor_pb2, descriptor_pool

from tools.openapi import answers
from tools.openapi import generate as openapi
from tools.openapi.generate import build, render
from tools.openapi.swagger import PRAGMA, generate, plugin_request, without_pragmas
from yieldagent.domain.errors import NotFound
from yieldagent.servicers.method_policy import api_services, load_policies

ROOT = Path(__file__).resolve().parents[2]
DESCRIPTOR_SET = ROOT / "build" / "yieldagent.pb"
COMMITTED = ROOT / "envoy" / "openapi.json"


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return build(generate(DESCRIPTOR_SET))


def _operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, verbs in document["paths"].items():
        for verb, operation in verbs.items():
            yield path, verb, operation


def _by_id(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {op["operationId"]: op for _, _, op in _operations(document)}


def test_the_committed_document_is_what_the_protos_give(document: dict[str, Any]) -> None:
    assert COMMITTED.read_text(encoding="utf-8") == render(document)


def _routed() -> set[str]:
    """The API methods with an http rule (WatchWallet, a gRPC-only stream, has none)."""
    return {
        m.name
        for s in api_services()
        for m in s.methods
        if m.GetOptions().HasExtension(annotations_pb2.http)
    }


def _texts(node: Any) -> Iterator[tuple[str, str]]:
    """Every text a reader sees: descriptions, summaries and titles, at any depth."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "summary", "title") and isinstance(value, str):
                yield key, value
            else:
                yield from _texts(value)
    elif isinstance(node, list):
        for item in node:
            yield from _texts(item)


def test_no_text_carries_a_tool_pragma(document: dict[str, Any]) -> None:
    texts = list(_texts(document))
    assert len(texts) > 100
    for key, text in texts:
        assert "buf:lint" not in text, (key, text)
        for line in text.splitlines():
            assert not PRAGMA.match(line), (key, text)


def test_pragmas_are_dropped_from_comments_and_nothing_else() -> None:
    comment = (
        " buf:lint:ignore FIELD_LOWER_SNAKE_CASE\n"
        " Address where the user deposits funds.\n"
        " api-linter: core::0131=disabled\n"
        " Ignore nothing else: a noqa in mid-line stays.\n"
    )
    kept = without_pragmas(comment).splitlines()
    assert kept == [
        " Address where the user deposits funds.",
        " Ignore nothing else: a noqa in mid-line stays.",
    ]


def test_every_method_with_an_http_rule_is_one_operation(document: dict[str, Any]) -> None:
    routed = _routed()
    assert "WatchWallet" not in routed
    assert set(_by_id(document)) == routed


def test_operations_are_grouped_under_the_names_partners_use(document: dict[str, Any]) -> None:
    names = [
        "Accounts",
        "Wallets",
        "Wallet details",
        "Rewards",
        "History",
        "Catalog",
        "Optimizer",
        "Stats",
        "Config",
        "Health",
    ]
    assert [tag["name"] for tag in document["tags"]] == names
    for tag in document["tags"]:
        description = tag["description"]
        assert description.endswith(".") and "\n" not in description, tag
        assert "Service" not in description, tag
    grouped = {op["operationId"]: op["tags"] for _, _, op in _operations(document)}
    assert all(len(tags) == 1 and tags[0] in names for tags in grouped.values()), grouped
    assert grouped["CreateSmartAccount"] == ["Accounts"]
    assert grouped["Withdraw"] == ["Wallets"]
    assert grouped["ClaimRewards"] == ["Rewards"]
    assert grouped["Healthcheck"] == ["Health"]
    assert grouped["GetWalletEarnings"] == ["History"]
    assert grouped["GetFee"] == ["Wallet details"]
    assert {s.name for s in api_services()} == set(openapi.TAGS)


def test_statuses_security_and_idempotency_follow_the_method_policies(
    document: dict[str, Any],
) -> None:
    operations = _by_id(document)
    routed = _routed()
    for policy in load_policies().values():
        name = policy.full_name.rsplit("/", 1)[1]
        if name not in routed:
            continue
        operation = operations[name]
        responses = operation["responses"]
        assert min(responses) == str(policy.success_status)
        headers = [p["name"] for p in operation.get("parameters", []) if p["in"] == "header"]
        assert ("Idempotency-Key" in headers) == policy.idempotent
        guarded = policy.permission is not None
        assert bool(operation["security"]) == guarded
        for status in ("401", "403", "429"):
            assert (status in responses) == guarded, (policy.full_name, status)
        if policy.idempotent:
            assert "Retry-After" in responses["409"]["headers"], name
        # 422 wherever a value can be sent; 413 wherever a body can; 404 wherever the path
        # names something (or the use case looks something up).
        assert ("422" in responses) == bool(policy.field_sources or policy.idempotent), name
        assert ("413" in responses) == ("requestBody" in operation), name
        declared = {error.__class__ for _, error, _ in answers.declared(name)}
        finds = "{" in _path_of(document, name) or NotFound in declared
        assert ("404" in responses) == finds, name
        success = responses[str(policy.success_status)]
        assert ("content" in success) == (policy.success_status != 204)


def _path_of(document: dict[str, Any], operation_id: str) -> str:
    return next(path for path, _, op in _operations(document) if op["operationId"] == operation_id)


def test_each_operation_lists_only_what_it_can_answer(document: dict[str, Any]) -> None:
    operations = _by_id(document)
    statuses = {name: set(map(int, op["responses"])) for name, op in operations.items()}
    # Public reads of the catalog and the service itself take nothing that can be wrong.
    assert statuses["Healthcheck"] == {200}
    assert statuses["ListChains"] == {200}
    assert statuses["ListTokens"] == {200, 404, 422}
    assert statuses["GetWallet"] == {200, 404, 422}
    # 500 where the partner contract lists it, and nowhere else.
    assert {n for n, found in statuses.items() if 500 in found} == {
        "ActivateWallet",
        "CreateSmartAccount",
    }
    # A status the use case does not raise is not listed: 501 is activation's alone.
    assert {n for n, found in statuses.items() if 501 in found} == {"ActivateWallet"}
    assert 409 not in statuses["ListTransactions"] | statuses["GetApr"]
    assert statuses["UpdateProtocols"] >= {204, 400, 401, 403, 404, 409, 413, 422, 429}
    assert 503 not in statuses["UpdateProtocols"]


def test_every_declared_refusal_names_a_routed_method() -> None:
    assert set(answers.REFUSALS) == _routed()
    with pytest.raises(ValueError, match="Nope: its use case's errors are not declared"):
        answers.declared("Nope")


def _examples(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any], Any]]:
    for _, _, operation in _operations(document):
        for status, response in operation["responses"].items():
            if int(status) < 400:
                continue
            media = response["content"]["application/json"]
            for example in media["examples"].values():
                yield operation["operationId"], status, media["schema"], example


def test_errors_are_detail_bodies_and_422_lists_loc_msg_type(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    item = schemas["ValidationError"]["properties"]["detail"]["items"]
    assert item["required"] == ["loc", "msg", "type"]
    assert schemas["Error"]["properties"]["detail"]["type"] == "string"
    assert schemas["Error"]["properties"]["request_id"]["type"] == "string"
    seen = set()
    for name, status, schema, example in _examples(document):
        seen.add(status)
        body = example["value"]
        assert example["summary"], (name, status)
        assert set(body) == {"detail", "request_id"}, (name, status)
        if status == "422":
            assert schema == {"$ref": "#/components/schemas/ValidationError"}, name
            assert body["detail"], name
            for violation in body["detail"]:
                assert set(violation) == {"loc", "msg", "type"}, (name, violation)
                assert violation["loc"][0] in ("body", "path", "query", "header"), violation
        else:
            assert schema == {"$ref": "#/components/schemas/Error"}, (name, status)
            assert isinstance(body["detail"], str), (name, status)
    assert seen == {"400", "401", "403", "404", "409", "413", "422", "429", "500", "501", "503"}
    for _, _, operation in _operations(document):
        for status, response in operation["responses"].items():
            assert response["headers"]["X-Request-Id"] == {"$ref": "#/components/headers/RequestId"}
            if status == "429":
                assert response["headers"]["Retry-After"]["required"] is True
            if status == "409" and "Retry-After" in response["headers"]:
                # Always there when every reason is passing (an Idempotency-Key in use).
                always = operation["operationId"] in ("CreateSmartAccount", "CreateSafeAccount")
                assert response["headers"]["Retry-After"]["required"] is always


def test_422_examples_locate_fields_where_the_http_rule_binds_them(
    document: dict[str, Any],
) -> None:
    located = {
        (name, tuple(v["loc"]))
        for name, status, _, example in _examples(document)
        if status == "422"
        for v in example["value"]["detail"]
    }
    assert ("Withdraw", ("body", "amount")) in located
    assert ("TopUp", ("query", "tx_hash")) in located
    assert ("ListProtocols", ("path", "token")) in located
    assert ("UpdateProtocols", ("body",)) in located  # the bare array is the body
    assert ("ListTokens", ("path", "chain_id")) in located
    assert ("CreateSmartAccount", ("header", "Idempotency-Key")) in located


def test_the_description_says_what_a_partner_needs_and_names_no_module(
    document: dict[str, Any],
) -> None:
    description = document["info"]["description"]
    assert not re.search(r"\b(tools|yieldagent|servicers|domain)\.[a-z_]", description)
    assert "protoc" not in description
    for words in ("X-Partner-Name", "413", "415", "431", "500", "smallest unit"):
        assert words in description


def test_amounts_and_64_bit_integers_are_json_integers_and_optionals_nullable(
    document: dict[str, Any],
) -> None:
    schemas = document["components"]["schemas"]
    deposit = schemas["Deposit"]["properties"]
    assert deposit["amount"]["type"] == "integer"  # a json_integer string field
    assert deposit["block_number"]["type"] == ["integer", "null"]  # optional uint64
    assert deposit["block_number"]["format"] == "int64"
    wallet = schemas["Wallet"]
    assert wallet["properties"]["last_deactivation_date"]["type"] == ["string", "null"]
    # Printed even when unset: optional ones as null; the rest with their defaults.
    assert "last_deactivation_date" in wallet["required"]
    assert "deposits" in wallet["required"]
    assert wallet["additionalProperties"] is False


def test_requests_take_amounts_as_integers_or_decimal_strings(document: dict[str, Any]) -> None:
    withdraw = _by_id(document)["Withdraw"]
    body = withdraw["requestBody"]["content"]["application/json"]["schema"]
    assert body["properties"]["amount"]["type"] == ["integer", "string"]
    # Path fields are not body fields: the edge refuses a body that names them.
    assert set(body["properties"]) == {"amount"}


def test_a_body_bound_to_a_repeated_field_is_a_bare_json_array(document: dict[str, Any]) -> None:
    update = _by_id(document)["UpdateProtocols"]
    body = update["requestBody"]["content"]["application/json"]["schema"]
    assert body["type"] == "array"
    assert body["items"] == {"type": "string"}
    assert "protocols" not in [p["name"] for p in update["parameters"]]


def test_bodyless_posts_list_their_query_parameters(document: dict[str, Any]) -> None:
    top_up = _by_id(document)["TopUp"]
    query = {p["name"]: p for p in top_up["parameters"] if p["in"] == "query"}
    assert set(query) == {"tx_hash"}
    deactivate = _by_id(document)["DeactivateWallet"]
    transfer = next(p for p in deactivate["parameters"] if p["name"] == "transfer")
    assert transfer["schema"]["type"] == "boolean"  # a query value is never null


def test_the_plugin_request_disguises_what_v1_cannot_read() -> None:
    request = plugin_request(DESCRIPTOR_SET.read_bytes())
    rules = {}
    for file in request.proto_file:
        for service in file.service:
            for method in service.method:
                rules[method.name] = method.options
    top_up = rules["TopUp"].Extensions[annotations_pb2.http]
    assert top_up.WhichOneof("pattern") == "delete"
    update = rules["UpdateProtocols"].Extensions[annotations_pb2.http]
    assert (update.WhichOneof("pattern"), update.body) == ("delete", "")
    withdraw = rules["Withdraw"].Extensions[annotations_pb2.http]
    assert (withdraw.WhichOneof("pattern"), withdraw.body) == ("post", "*")


STREAMING_PROTO = """
syntax = "proto3";
package yieldagent.v1;
import "google/api/annotations.proto";
import "yieldagent/v1/types.proto";

option go_package = "github.com/yieldagent/yieldagent/gen/yieldagent/v1;yieldagentv1";

// A service with a streaming method, as WatchWallet will be.
service StreamingProbeService {
  // Streams pages; no REST route.
  rpc WatchProbe(ProbeRequest) returns (stream Pagination);
  // Reads one page.
  rpc GetProbe(ProbeRequest) returns (Pagination) {
    option (google.api.http) = {get: "/api/v1/probes/{wallet}"};
  }
}

// Names a wallet.
message ProbeRequest {
  // Smart account address.
  string wallet = 1;
}
"""


def test_a_streaming_method_without_an_http_rule_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "protos" / "yieldagent" / "v1" / "streaming_probe.proto"
    source.parent.mkdir(parents=True)
    source.write_text(STREAMING_PROTO)
    google = Path(__import__("google.api", fromlist=["_"]).__path__[0]).parents[1]
    descriptors = tmp_path / "probe.pb"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{tmp_path / 'protos'}",
            f"-I{ROOT / 'protos'}",
            f"-I{google}",
            "--include_imports",
            "--include_source_info",
            f"--descriptor_set_out={descriptors}",
            str(source),
            *map(str, sorted((ROOT / "protos" / "yieldagent" / "v1").glob("*.proto"))),
        ],
        check=True,
    )
    files = descriptor_pb2.FileDescriptorSet.FromString(descriptors.read_bytes())
    probe = next(f for f in files.file if f.name.endswith("streaming_probe.proto"))
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(probe.name)
    except KeyError:
        pool.Add(probe)
    service = pool.FindServiceByName("yieldagent.v1.StreamingProbeService")
    real = list(api_services())
    monkeypatch.setattr(openapi, "api_services", lambda: iter([*real, service]))
    with pytest.raises(ValueError, match="StreamingProbeService has no partner name"):
        build(generate(descriptors))
    monkeypatch.setitem(openapi.TAGS, "StreamingProbeService", "Probes")
    with pytest.raises(ValueError, match="GetProbe: its use case's errors are not declared"):
        build(generate(descriptors))
    monkeypatch.setitem(answers.REFUSALS, "GetProbe", ())

    document = build(generate(descriptors))

    operations = _by_id(document)
    assert "GetProbe" in operations
    assert "WatchProbe" not in operations
    assert list(document["paths"]["/api/v1/probes/{wallet}"]) == ["get"]
    assert document["tags"][-1] == {
        "name": "Probes",
        "description": "A service with a streaming method, as WatchWallet will be.",
    }


def test_apr_by_token_answers_a_bare_array(document: dict[str, Any]) -> None:
    operation = document["paths"]["/api/v1/{chain_id}/wallets/{wallet}/apr/tokens"]["get"]
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema["type"] == "array"
    assert schema["items"] == {"$ref": "#/components/schemas/AllocatedValue"}


def _request_schemas(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every request value's schema, named by operation and field: the parameters, and the
    body's properties at any depth (through the components they refer to)."""
    components = document["components"]["schemas"]

    def walk(where: str, schema: dict[str, Any], depth: int = 0) -> Iterator[tuple[str, Any]]:
        if "$ref" in schema and depth < 4:
            yield from walk(where, components[schema["$ref"].rsplit("/", 1)[-1]], depth + 1)
            return
        yield where, schema
        for name, member in schema.get("properties", {}).items():
            yield from walk(f"{where}.{name}", member, depth)
        if isinstance(schema.get("items"), dict) and "example" not in schema:
            yield from walk(f"{where}[]", schema["items"], depth)

    for path, verb, operation in _operations(document):
        for parameter in operation.get("parameters", []):
            yield f"{verb} {path} {parameter['name']}", parameter["schema"]
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if body:
            yield from walk(f"{verb} {path} body", body["schema"])


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    python = {
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "string": lambda v: isinstance(v, str),
        "boolean": lambda v: isinstance(v, bool),
        "array": lambda v: isinstance(v, list),
        "null": lambda v: v is None,
    }
    if not any(python[kind](value) for kind in kinds):
        return False
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if numeric and not schema.get("minimum", value) <= value <= schema.get("maximum", value):
        return False
    if isinstance(value, str) and "pattern" in schema:
        return re.search(schema["pattern"], value) is not None
    return True


def test_request_samples_show_values_that_work(document: dict[str, Any]) -> None:
    """Redoc's request samples show each field's example, else the type's extreme
    ("chain": -2147483648): every scalar request value has one that its schema takes."""
    scalars = [
        (where, schema)
        for where, schema in _request_schemas(document)
        if schema.get("type") not in (None, "object", "boolean", ["boolean", "null"])
        and "$ref" not in schema.get("items", {})  # a list of messages: their fields have some
    ]
    assert scalars
    missing = [where for where, schema in scalars if "example" not in schema]
    assert not missing, missing
    for where, schema in scalars:
        example = schema["example"]
        assert _fits(example, schema), (where, example, schema)
        if where.endswith((" chain_id", ".chain")):
            assert example == 8453, where
        if isinstance(example, str) and re.fullmatch("0x[0-9a-fA-F]{40}", example):
            assert example == to_checksum_address(example), where
