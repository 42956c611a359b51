"""The contract's JSON of a reply the service renders itself, for the methods it serves as
JSON on REST (``method_policy.SERVED_AS_JSON``).

It is the JSON Envoy's transcoder prints (proto field names, every field without presence
printed) shaped as envoy/rest.lua shapes that: the decimal strings at the method's integer
paths as JSON integers, and the unset fields at its null paths as ``null``. It travels in a
``google.api.HttpBody``: Envoy's transcoder is rendered with a descriptor set in which these
methods answer one (``composition.edge``), and passes its bytes to the client as they are. gRPC
callers get the method's own message; a servicer that keeps its replies answers both
kinds (``servicers.replies.Reply``), and the interceptor, which knows the caller, sends
one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, cast

from google.api import httpbody_pb2
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from yieldagent.servicers.method_policy import MethodPolicy

CONTENT_TYPE = "application/json"

_INTEGER = re.compile(r"-?[0-9]+")

Shape = dict[str, Any]
"""A JSON path tree: each key maps to its children's tree, or to the leaf's rules (a set
of ``"integer"`` and ``"null"``)."""


class Renderer:
    """Renders one method's replies as its REST reply: a serialized ``HttpBody``."""

    __slots__ = ("_bare", "_shape")

    def __init__(self, policy: MethodPolicy) -> None:
        self._bare = policy.bare_field
        self._shape: Shape = {}
        for rule, paths in (("integer", policy.integer_paths), ("null", policy.null_paths)):
            for path in paths:
                *parents, leaf = path.split(".")
                node = self._shape
                for name in parents:
                    node = node.setdefault(name, {})
                node.setdefault(leaf, set()).add(rule)

    def __call__(self, reply: Message) -> bytes:
        document = _in_field_order(
            json_format.MessageToDict(
                reply, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
            ),
            cast(Descriptor, reply.DESCRIPTOR),
        )
        _shaped(document, self._shape)
        shown: Any = document if self._bare is None else document.get(self._bare, [])
        data = json.dumps(shown, ensure_ascii=False, separators=(",", ":")).encode()
        body = httpbody_pb2.HttpBody(content_type=CONTENT_TYPE, data=data)
        serialized: bytes = body.SerializeToString()
        return serialized


def _in_field_order(document: dict[str, Any], message: Descriptor) -> dict[str, Any]:
    """``document`` with its keys in field order, as the transcoder prints them (protobuf
    prints the fields left at their defaults after the others)."""
    ordered = {}
    for field in message.fields:
        if field.name not in document:
            continue
        value = document[field.name]
        child = field.message_type
        if child is not None and not child.GetOptions().map_entry and not _well_known(child):
            if isinstance(value, list):
                value = [_in_field_order(item, child) for item in value]
            elif isinstance(value, dict):
                value = _in_field_order(value, child)
        ordered[field.name] = value
    return ordered


def _well_known(message: Descriptor) -> bool:
    """Protobuf's own types, whose JSON is not an object of their fields."""
    return message.file.package == "google.protobuf"


def _shaped(document: dict[str, Any], shape: Mapping[str, Any]) -> None:
    """Shapes ``document`` in place; a list's items live at the list's own path."""
    for key, rules in shape.items():
        value = document.get(key)
        if isinstance(rules, dict):
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict):
                    _shaped(item, rules)
        elif key not in document:
            if "null" in rules:
                document[key] = None
        elif "integer" in rules:
            document[key] = _integers(value)


def _integers(value: Any) -> Any:
    if isinstance(value, list):
        return [_integers(item) for item in value]
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    return value
