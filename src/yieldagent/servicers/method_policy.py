"""What the proto descriptors say about each method, read once at start-up.

The REST edge (Envoy plus envoy/rest.lua) knows no route. For every
``yieldagent.v1`` method this module derives, from the proto options alone:

- the permission a partner needs (``partner_permission``, unset for public calls);
- the REST success status (``http_success_code``);
- whether the method accepts an idempotency key (``idempotent``), and then the
  class of its response, to replay a stored one;
- the JSON paths of the response whose decimal strings print as integers: every
  64-bit integer field (protobuf's JSON quotes those) and every string field
  marked ``json_integer``;
- the JSON paths printed as ``null`` when unset: every proto3 ``optional`` scalar;
- where each request field comes from on REST (``path``, ``query`` or ``body``),
  from the ``google.api.http`` rule, to locate input errors as the contract does;
- whether the service renders the method's REST reply itself (``SERVED_AS_JSON``);
- whether the method is a money call (``MONEY_CALLS``), limited per wallet.

Envoy has the status and JSON hints from the request schema it is rendered with
(``composition.edge``); the service renders the same hints itself for ``SERVED_AS_JSON``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.api import annotations_pb2
from google.protobuf import message_factory
from google.protobuf.descriptor import (
    Descriptor,
    FieldDescriptor,
    MethodDescriptor,
    ServiceDescriptor,
)
from google.protobuf.message import Message

from yieldagent.v1 import (
    catalog_pb2,
    config_pb2,
    health_pb2,
    history_pb2,
    optimizer_pb2,
    options_pb2,
    rewards_pb2,
    smart_accounts_pb2,
    stats_pb2,
    wallet_details_pb2,
    wallets_pb2,
)

API_FILES = (
    health_pb2,
    catalog_pb2,
    smart_accounts_pb2,
    wallets_pb2,
    rewards_pb2,
    stats_pb2,
    optimizer_pb2,
    history_pb2,
    config_pb2,
    wallet_details_pb2,
)

SIXTY_FOUR_BIT = frozenset(
    {
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED64,
    }
)
"""The 64-bit integer types, which proto3 JSON prints as strings and our edge as numbers."""

STATUS_HEADER = "x-yieldagent-status"
INTEGERS_HEADER = "x-yieldagent-integers"
NULLS_HEADER = "x-yieldagent-nulls"
ERROR_HEADER = "x-yieldagent-error"

Metadata = tuple[tuple[str, str], ...]

SERVED_AS_ARRAY = {
    "/yieldagent.v1.HistoryService/ListWalletTokenAprs": "items",
    "/yieldagent.v1.WalletDetailService/ListWalletProtocols": "protocols",
    "/yieldagent.v1.WalletDetailService/GetConstraints": "constraints",
}
"""Methods whose REST reply is the bare JSON array of one repeated field, by method: what
the production client reads. Envoy's transcoder, and the OpenAPI generator, print a
message only."""
SERVED_AS_JSON = frozenset({"/yieldagent.v1.WalletService/GetWallet", *SERVED_AS_ARRAY})
"""Methods whose REST reply the service renders as the contract's JSON itself, which Envoy
passes on as it is (``servicers.rest_json``): the wallet read partners poll, kept per
wallet version. Envoy's transcoding and reshaping of it were most of Envoy's work per read,
and grew with the wallet's history (``docs/performance.md``)."""

MONEY_CALLS = frozenset(
    {
        "/yieldagent.v1.WalletService/ActivateWallet",
        "/yieldagent.v1.WalletService/TopUp",
        "/yieldagent.v1.WalletService/Withdraw",
        "/yieldagent.v1.WalletService/RunAgent",
        "/yieldagent.v1.WalletService/DeactivateWallet",
        "/yieldagent.v1.RewardService/ClaimRewards",
    }
)
"""The calls that can make the operator pay gas on a wallet (its ``chain_id`` and
``wallet`` fields name it): each counts against the per-wallet limit on money calls
(``domain.partners.money_calls``)."""


@dataclass(frozen=True, slots=True)
class MethodPolicy:
    """How one RPC is guarded and rendered."""

    full_name: str
    permission: str | None
    success_status: int
    rest_metadata: Metadata
    field_sources: Mapping[str, str] = field(default_factory=dict)
    body_field: str | None = None
    idempotent: bool = False
    response_type: type[Message] | None = None
    """The response class, for idempotent methods (a stored response is replayed)."""
    integer_paths: tuple[str, ...] = ()
    """The response's JSON paths whose decimal strings REST prints as integers."""
    null_paths: tuple[str, ...] = ()
    """The response's JSON paths REST prints as null when unset."""
    served_as_json: bool = False
    """Whether the service renders the REST reply itself (``SERVED_AS_JSON``)."""
    bare_field: str | None = None
    """The repeated field whose array is the whole REST reply (``SERVED_AS_ARRAY``)."""
    money_call: bool = False
    """Whether the call counts against its wallet's money call limit (``MONEY_CALLS``)."""

    def locate(self, loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
        """A request field's location as REST reports it: ``("body", "eoa")``.

        A field bound to the whole body (a bare JSON array, say) is the body itself.
        A location that already names a header (``("header", "Idempotency-Key")``)
        stays as it is.
        """
        if not loc:
            return ("body",)
        if loc[0] == "header":
            return loc
        if loc[0] == self.body_field:
            return ("body", *loc[1:])
        return (self.field_sources.get(str(loc[0]), "body"), *loc)


def _option(options: Any, extension: Any) -> Any:
    """The value of a custom option (protobuf's typing of extensions is too narrow)."""
    return options.Extensions[extension]


def api_services() -> Iterator[ServiceDescriptor]:
    """Every service of the public API."""
    for module in API_FILES:
        yield from module.DESCRIPTOR.services_by_name.values()


def _json_paths(message: Descriptor, prefix: str, depth: int = 0) -> tuple[list[str], list[str]]:
    integers: list[str] = []
    nulls: list[str] = []
    if depth > 8:  # no message of the API nests deeper; guards against recursion
        return integers, nulls
    for member in message.fields:
        path = prefix + member.name
        if member.type == FieldDescriptor.TYPE_MESSAGE:
            child = member.message_type
            assert child is not None
            if child.GetOptions().map_entry:
                continue
            sub_integers, sub_nulls = _json_paths(child, path + ".", depth + 1)
            integers += sub_integers
            nulls += sub_nulls
            continue
        if member.type in SIXTY_FOUR_BIT or _option(member.GetOptions(), options_pb2.json_integer):
            integers.append(path)
        if member.has_presence and not member.is_repeated:
            nulls.append(path)
    return integers, nulls


def _field_sources(method: MethodDescriptor) -> tuple[dict[str, str], str | None]:
    rule = _option(method.GetOptions(), annotations_pb2.http)
    kind = rule.WhichOneof("pattern")
    template = getattr(rule, kind) if kind and kind != "custom" else rule.custom.path
    path_fields = set(re.findall(r"{([^}=]+)", template))
    sources = {}
    for name in method.input_type.fields_by_name:
        if name in path_fields:
            sources[name] = "path"
        elif rule.body in ("*", name):
            sources[name] = "body"
        else:
            sources[name] = "query"
    body_field = rule.body if rule.body not in ("", "*") else None
    return sources, body_field


def policy_for(method: MethodDescriptor) -> MethodPolicy:
    """Reads the policy of one method from its descriptor."""
    options = method.GetOptions()
    permission: str | None = _option(options, options_pb2.partner_permission) or None
    success_status: int = _option(options, options_pb2.http_success_code) or 200
    idempotent = bool(_option(options, options_pb2.idempotent))
    full_name = f"/{method.containing_service.full_name}/{method.name}"
    if idempotent and permission is None:  # keys are scoped per partner
        raise ValueError(f"{full_name} is idempotent but names no partner_permission")
    assert method.output_type is not None
    integers, nulls = _json_paths(method.output_type, "")
    sources, body_field = _field_sources(method)
    metadata: list[tuple[str, str]] = []
    if success_status != 200:
        metadata.append((STATUS_HEADER, str(success_status)))
    if integers:
        metadata.append((INTEGERS_HEADER, ",".join(integers)))
    if nulls:
        metadata.append((NULLS_HEADER, ",".join(nulls)))
    return MethodPolicy(
        full_name=full_name,
        permission=permission,
        success_status=success_status,
        rest_metadata=tuple(metadata),
        field_sources=sources,
        body_field=body_field,
        idempotent=idempotent,
        response_type=message_factory.GetMessageClass(method.output_type) if idempotent else None,
        integer_paths=tuple(integers),
        null_paths=tuple(nulls),
        served_as_json=full_name in SERVED_AS_JSON,
        bare_field=SERVED_AS_ARRAY.get(full_name),
        money_call=full_name in MONEY_CALLS,
    )


def load_policies(services: Iterable[ServiceDescriptor] | None = None) -> dict[str, MethodPolicy]:
    """Policies of every API method, keyed by gRPC method path (/pkg.Service/Method)."""
    policies = {}
    for service in api_services() if services is None else services:
        for method in service.methods:
            policy = policy_for(method)
            policies[policy.full_name] = policy
    return policies
