"""The OpenAPI document of the partner REST API: generated from the protos, then made true.

``tools.openapi.swagger`` runs protoc-gen-swagger, which knows the protos' http
rules, comments and types but nothing of the edge in front of the transcoder. This
module turns its Swagger 2.0 output into an OpenAPI 3.1 document of what the edge
(Envoy, envoy/rest.lua, envoy/rest_check.lua) really answers, from the sources the
edge itself uses: the method policies read from the proto options
(``servicers.method_policy``), the error mapping (``servicers.errors``) and the
request schema the edge enforces (``service.edge``). No route is listed here.

OpenAPI 3.1 rather than Swagger 2.0: its schemas are JSON Schema, which says
"a string or null" (``optional`` fields, printed as ``null`` when unset) and
"an integer or a decimal string" (amounts a request may send either way) plainly,
and a 204 without a body is a response without content.

Per operation it sets:

- the success status (``http_success_code``: 201, or 204 without a body);
- the JSON types the edge prints: 64-bit integers and ``json_integer`` amounts as
  JSON integers, ``optional`` scalars as present and ``null`` when unset; every other
  field is always printed (``always_print_primitive_fields``) but nested messages;
- the request: path and query parameters where the http rule binds them (query
  parameters of body-less POSTs too), the JSON body without the path's fields, a body
  naming a repeated field as a bare JSON array;
- security: the ``x-partner-name`` and ``x-partner-api-key`` headers where the method
  names a ``partner_permission``; none on public methods;
- ``Idempotency-Key`` and the ``Idempotent-Replayed`` answer where ``idempotent``;
- the error statuses it can answer and no other, each with its reasons and an example
  body per reason (``tools.openapi.answers``: from the route, the policy and the
  errors the method's use case raises); ``Retry-After`` where a reason carries it; all
  ``{"detail": "...", "request_id": "..."}`` but 422, whose detail lists
  ``{loc, msg, type}``;
- the ``X-Request-Id`` header Envoy sets on every answer;
- its tag: the name partners know its service's operations by (``TAGS``), described
  by the first sentence of the service's comment.

What any path may answer (no operation matches it, oversized headers, the service
down) is said once, in the document's description.

``python -m tools.openapi.generate OUTPUT`` writes the document (``make openapi``);
``--check`` fails when OUTPUT differs from what the protos give (``make check-protos``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from google.api import annotations_pb2
from google.protobuf.descriptor import FieldDescriptor, MethodDescriptor

import yieldagent
from tools.openapi.answers import BODY_LIMIT, EXAMPLE_REQUEST_ID, REFUSALS, Answer, answers
from tools.openapi.schemas import Schemas, definition_name, messages, option, ref_target
from tools.openapi.swagger import PLUGIN, generate, handed_over
from yieldagent.servicers.idempotency import MAX_KEY_LENGTH
from yieldagent.servicers.method_policy import (
    MethodPolicy,
    api_services,
    policy_for,
)

TITLE = "yieldagent partner API"
PARTNER_NAME_HEADER = "X-Partner-Name"
PARTNER_KEY_HEADER = "X-Partner-API-Key"
IDEMPOTENCY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
TAGS = {
    "SmartAccountService": "Accounts",
    "WalletService": "Wallets",
    "WalletDetailService": "Wallet details",
    "RewardService": "Rewards",
    "HistoryService": "History",
    "CatalogService": "Catalog",
    "OptimizerService": "Optimizer",
    "StatsService": "Stats",
    "ConfigService": "Config",
    "HealthcheckService": "Health",
}
"""The name a partner knows each service's operations by, in the order the docs list them
(the order of an integration: the account first). Every API service needs one."""


_STATUS_TITLE = {
    400: "Bad request.",
    401: "Unauthenticated.",
    403: "Access denied.",
    404: "Not found.",
    409: "Conflict.",
    413: "Payload too large.",
    422: "Invalid input: each item of `detail` locates one field (`body`, `path`, `query` "
    "or `header`, then its name).",
    429: "Too many requests.",
    500: "Internal server error.",
    501: "Not implemented.",
    503: "Unavailable.",
}
"""The first words of each error response's description; its reasons follow."""


def _rule(method: MethodDescriptor) -> tuple[str, str, str] | None:
    """The http rule's verb, path template and body; None without a rule."""
    rule = option(method.GetOptions(), annotations_pb2.http)
    verb = rule.WhichOneof("pattern")
    if verb is None:
        return None
    if verb == "custom":
        raise ValueError(f"{method.full_name}: custom http patterns are not supported")
    return verb, getattr(rule, verb), rule.body


def _text(comment: str) -> tuple[str, str]:
    """A method comment as a summary (its first sentence) and a description."""
    text = " ".join(line.strip() for line in comment.splitlines()).strip()
    summary = re.split(r"(?<=[.;:])\s", text, maxsplit=1)[0].rstrip(".;:")
    return summary, text


def _parameter(source: dict[str, Any], member: FieldDescriptor, schemas: Schemas) -> Any:
    prop = {k: v for k, v in source.items() if k in ("type", "format", "items", "enum")}
    schema = schemas.field(member, prop, request=True)
    schema.pop("description", None)
    if source["in"] == "query":  # a query value cannot be null
        kind = schema.get("type")
        if isinstance(kind, list):
            schema["type"] = [k for k in kind if k != "null"]
            if len(schema["type"]) == 1:
                schema["type"] = schema["type"][0]
    parameter: dict[str, Any] = {"name": source["name"], "in": source["in"]}
    if source.get("description"):
        parameter["description"] = source["description"]
    parameter["required"] = bool(source.get("required", False))
    parameter["schema"] = schema
    return parameter


_REQUEST_ID = {"$ref": "#/components/headers/RequestId"}


def _refusals(found: list[Answer]) -> dict[str, Any]:
    """The error responses of one operation: per status, its reasons and an example
    body for each."""
    by_status: dict[int, list[Answer]] = {}
    for answer in found:
        by_status.setdefault(answer.status, []).append(answer)
    responses: dict[str, Any] = {}
    for status, group in sorted(by_status.items()):
        if status not in _STATUS_TITLE:
            raise ValueError(f"no title for the status {status}")
        whys = list(dict.fromkeys(answer.why for answer in group))
        examples: dict[str, Any] = {}
        for answer in group:
            key, number = answer.name, 2
            while key in examples:
                key, number = f"{answer.name}_{number}", number + 1
            value = {**answer.body, "request_id": EXAMPLE_REQUEST_ID}
            examples[key] = {"summary": answer.why, "value": value}
        schema = "ValidationError" if isinstance(group[0].body["detail"], list) else "Error"
        headers: dict[str, Any] = {"X-Request-Id": _REQUEST_ID}
        if any(answer.retry_after for answer in group):
            headers["Retry-After"] = {
                "description": "Seconds after which a retry may succeed.",
                "required": all(answer.retry_after for answer in group),
                "schema": {"type": "integer", "minimum": 1},
            }
        responses[str(status)] = {
            "description": " ".join([_STATUS_TITLE[status], *whys]),
            "headers": headers,
            "content": {
                "application/json": {
                    "schema": {"$ref": f"#/components/schemas/{schema}"},
                    "examples": examples,
                }
            },
        }
    return responses


def _operation(
    method: MethodDescriptor,
    policy: MethodPolicy,
    source: dict[str, Any],
    schemas: Schemas,
) -> dict[str, Any]:
    rule = _rule(method)
    assert rule is not None
    _, template, body = rule
    request = method.input_type
    request_definition = definition_name(request)
    summary, description = _text(source.get("summary", "") + "\n" + source.get("description", ""))
    operation: dict[str, Any] = {
        "operationId": source["operationId"],
        "summary": summary,
        "description": description,
        "tags": [tag_of(method.containing_service.name)],
    }
    parameters = []
    path_fields = frozenset(re.findall(r"{([^}=]+)", template))
    request_body: dict[str, Any] | None = None
    for parameter in source.get("parameters", []):
        if parameter["in"] == "body":
            if body != "*":  # a body bound to one message field: no API method has one
                raise ValueError(f"{method.full_name}: body {body!r} is not supported")
            schema = schemas.convert(request_definition, True, without=path_fields)
            request_body = {"required": True, "content": {"application/json": {"schema": schema}}}
            continue
        if "." in parameter["name"]:  # a message field's fields, spelled out: none yet
            raise ValueError(f"{method.full_name}: nested parameter {parameter['name']}")
        member = request.fields_by_name[parameter["name"]]
        if parameter["name"] == body:  # a repeated field as the body: a bare JSON array
            schema = schemas.field(member, parameter, request=True)
            request_body = {
                "description": parameter.get("description", ""),
                "required": True,
                "content": {"application/json": {"schema": schema}},
            }
            continue
        parameters.append(_parameter(parameter, member, schemas))
    if policy.idempotent:
        parameters.append(
            {
                "name": IDEMPOTENCY_HEADER,
                "in": "header",
                "description": "Makes a retry safe: the same key and request answer what the "
                "first call answered, without executing again. Kept at least 24 hours, per "
                "partner; the same key with another request answers 422.",
                "required": False,
                "schema": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_KEY_LENGTH,
                    "pattern": "^[\\x20-\\x7e]+$",
                    "example": "3f6c1e0a-2b7d-4c5e-9a8f-1d2e3f4a5b6c",
                },
            }
        )
    if parameters:
        operation["parameters"] = parameters
    if request_body is not None:
        operation["requestBody"] = request_body
    operation["responses"] = _responses(method, policy, source, schemas) | _refusals(
        answers(method, policy, template, body)
    )
    if policy.permission is not None:
        operation["security"] = [{"partnerName": [], "partnerKey": []}]
        operation["description"] += f"\n\nNeeds the partner permission `{policy.permission}`."
    else:
        operation["security"] = []
    return operation


def _responses(
    method: MethodDescriptor, policy: MethodPolicy, source: dict[str, Any], schemas: Schemas
) -> dict[str, Any]:
    success: dict[str, Any] = {"description": "Success."}
    if policy.success_status == 204:
        success["description"] = "Success, with no body."
    else:
        reply = source["responses"]["200"]["schema"]
        schema = schemas.ref(ref_target(reply["$ref"]), False)
        if policy.bare_field is not None:  # the reply is that field's array alone
            converted = schemas.convert(ref_target(reply["$ref"]), False)
            schema = converted["properties"][policy.bare_field]
        success["content"] = {"application/json": {"schema": schema}}
    success["headers"] = {"X-Request-Id": _REQUEST_ID}
    if policy.idempotent:
        success["headers"] |= {
            REPLAYED_HEADER: {
                "description": "`true` when the answer is replayed for an Idempotency-Key.",
                "schema": {"type": "string", "enum": ["true"]},
            }
        }
    return {str(policy.success_status): success}


_REQUEST_ID_FIELD = {"type": "string", "description": "The request's id, as X-Request-Id."}


def _components(schemas: Schemas) -> dict[str, Any]:
    schemas.components["Error"] = {
        "type": "object",
        "description": "An error.",
        "required": ["detail"],
        "properties": {
            "detail": {"type": "string", "description": "What went wrong."},
            "request_id": _REQUEST_ID_FIELD,
        },
    }
    schemas.components["ValidationError"] = {
        "type": "object",
        "description": "Invalid input: one item per refused field.",
        "required": ["detail"],
        "properties": {
            "detail": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["loc", "msg", "type"],
                    "properties": {
                        "loc": {
                            "type": "array",
                            "description": "Where: body, path, query or header, then the "
                            "field's name and, in a list, its index.",
                            "items": {"type": ["string", "integer"]},
                        },
                        "msg": {"type": "string"},
                        "type": {"type": "string"},
                    },
                },
            },
            "request_id": _REQUEST_ID_FIELD,
        },
    }
    return {
        "schemas": dict(sorted(schemas.components.items())),
        "headers": {
            "RequestId": {
                "description": "The request's id (the client's X-Request-Id, or one Envoy "
                "made): in the service's logs and Envoy's access log.",
                "required": True,
                "schema": {"type": "string"},
            }
        },
        "securitySchemes": {
            "partnerName": {
                "type": "apiKey",
                "in": "header",
                "name": PARTNER_NAME_HEADER,
                "description": "The registered partner name; sent with the partner's key.",
            },
            "partnerKey": {
                "type": "apiKey",
                "in": "header",
                "name": PARTNER_KEY_HEADER,
                "description": "The partner's API key; from a server only, over HTTPS.",
            },
        },
    }


_DESCRIPTION = (
    "The REST API partners call to create smart accounts for their users, run a yield agent "
    "on each and follow what it does. Every operation is also a gRPC method of the same "
    "protos. Amounts are integers in the token's smallest unit. Operations with a key take "
    "the `X-Partner-Name` and `X-Partner-API-Key` headers and act on the partner's own "
    "wallets only.\n\n"
    "Each operation lists the statuses it answers, with the reasons for each and an example "
    'body. Errors are `{"detail": "...", "request_id": "..."}`; for 422, `detail` lists '
    "`{loc, msg, type}`. Beyond those, any path answers 404 when it matches no operation, "
    f"413 for a body above {BODY_LIMIT}, 415 for a gRPC content type, 431 for headers above "
    "8 KiB, 400 for a request HTTP cannot read, 503 while the service is unavailable and "
    "504 when it does not answer within 60 seconds. An unexpected failure answers 500; only "
    "activation and smart-account creation list it, as the partner contract does."
)


def build(swagger: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI 3.1 document, from the plugin's merged Swagger 2.0 output."""
    schemas = Schemas(swagger["definitions"], messages())
    paths: dict[str, dict[str, Any]] = {}
    listed = set()
    for service in api_services():
        for method in service.methods:
            rule = _rule(method)
            if rule is None:
                continue  # no REST route (a streaming method, say)
            if method.client_streaming or method.server_streaming:
                raise ValueError(f"{method.full_name}: the edge serves no streaming method")
            verb, template, body = rule
            repeated = body not in ("", "*") and method.input_type.fields_by_name[body].is_repeated
            shown, _ = handed_over(verb, body, repeated)
            source = swagger["paths"][template][shown]
            listed.add((template, shown))
            policy = policy_for(method)
            operation = _operation(method, policy, source, schemas)
            paths.setdefault(template, {})[verb] = operation
    left = {(path, verb) for path, verbs in swagger["paths"].items() for verb in verbs} - listed
    if left:
        raise ValueError(f"operations without a method: {sorted(left)}")
    stale = set(REFUSALS) - {op["operationId"] for verbs in paths.values() for op in verbs.values()}
    if stale:
        raise ValueError(f"refusals declared for no operation: {sorted(stale)}")
    comments = {tag["name"]: tag["description"] for tag in swagger.get("tags", [])}
    used = {tag for verbs in paths.values() for op in verbs.values() for tag in op["tags"]}
    return {
        "openapi": "3.1.0",
        "info": {"title": TITLE, "version": yieldagent.__version__, "description": _DESCRIPTION},
        "tags": [
            {"name": tag, "description": _first_sentence(comments[service])}
            for service, tag in TAGS.items()
            if tag in used
        ],
        "paths": dict(sorted(paths.items())),
        "components": _components(schemas),
    }


def tag_of(service: str) -> str:
    """The partner's name for the operations of a service (``TAGS``)."""
    if service not in TAGS:
        raise ValueError(f"{service} has no partner name in TAGS")
    return TAGS[service]


def _first_sentence(comment: str) -> str:
    """A service comment's first sentence, on one line: its tag's description."""
    text = " ".join(comment.split())
    return re.split(r"(?<=\.)\s", text, maxsplit=1)[0]


def render(document: dict[str, Any]) -> str:
    """The document as committed: indented JSON, UTF-8, one trailing newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Writes (or with --check, verifies) the document."""
    parser = argparse.ArgumentParser(prog="python -m tools.openapi.generate", description=__doc__)
    parser.add_argument("output", type=Path, help="the document, e.g. envoy/openapi.json")
    parser.add_argument("--descriptor", type=Path, default=Path("build/yieldagent.pb"))
    parser.add_argument("--plugin", default=PLUGIN)
    parser.add_argument("--check", action="store_true", help="fail if OUTPUT is stale")
    args = parser.parse_args(argv)
    text = render(build(generate(args.descriptor, args.plugin)))
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(
                f"{args.output} is stale: run 'make protos' (or 'make openapi') and commit",
                file=sys.stderr,
            )
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
