"""JSON schemas of the API's proto messages, as the REST edge prints and reads them.

protoc-gen-swagger's definitions are rewritten from the descriptors themselves: 64-bit
integers and ``json_integer`` amounts as JSON integers (a request may send an amount as a
decimal string too), ``optional`` scalars as present and ``null`` when unset, every other
field always printed but nested messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from tools.openapi.examples import example_of
from yieldagent.servicers.method_policy import SIXTY_FOUR_BIT, api_services
from yieldagent.v1 import options_pb2, types_pb2

_INT32_RANGE = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
}


def option(options: Any, extension: Any) -> Any:
    return options.Extensions[extension]


# Messages ------------------------------------------------------------------


def definition_name(message: Descriptor) -> str:
    """The plugin's name for a message: the package's last part, then the nesting."""
    names = []
    current: Descriptor | None = message
    while current is not None:
        names.append(current.name)
        current = current.containing_type
    return message.file.package.rsplit(".", 1)[-1] + "".join(reversed(names))


def _walk(messages: Any) -> Iterator[Descriptor]:
    for message in messages:
        yield message
        yield from _walk(message.nested_types)


def messages() -> dict[str, Descriptor]:
    """Every API message by the plugin's definition name."""
    found: dict[str, Descriptor] = {}
    files = [types_pb2.DESCRIPTOR] + [s.file for s in api_services()]
    for file in files:
        for message in _walk(file.message_types_by_name.values()):
            found[definition_name(message)] = message
    return found


def _schema_name(definition: str) -> str:
    return definition[len("v1") :] if definition.startswith("v1") else definition


def ref_target(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


# Schemas -------------------------------------------------------------------


class Schemas:
    """Converts the plugin's definitions into components/schemas, per direction.

    A message's schema depends on its direction: a response prints amounts as
    integers, a request takes them as integers or decimal strings. A message used both
    ways gets a second schema, suffixed ``Input``, for requests.
    """

    def __init__(self, definitions: dict[str, Any], messages: dict[str, Descriptor]) -> None:
        self._definitions = definitions
        self.messages = messages
        self._names: dict[tuple[str, bool], str] = {}
        self.components: dict[str, Any] = {}

    def ref(self, definition: str, request: bool) -> dict[str, Any]:
        """A ``$ref`` to the schema of a definition, converting it on first use."""
        key = (definition, request)
        if key not in self._names:
            name = _schema_name(definition)
            if (definition, not request) in self._names:
                name += "Input" if request else "Output"
            self._names[key] = name
            self.components[name] = {}  # reserved first: a message may contain itself
            self.components[name] = self.convert(definition, request)
        return {"$ref": f"#/components/schemas/{self._names[key]}"}

    def convert(
        self, definition: str, request: bool, without: frozenset[str] = frozenset()
    ) -> dict[str, Any]:
        """The JSON Schema of a definition, minus the fields in ``without``."""
        source = self._definitions[definition]
        message = self.messages[definition]
        schema: dict[str, Any] = {"type": "object"}
        if "description" in source:
            schema["description"] = source["description"]
        properties: dict[str, Any] = {}
        required: list[str] = []
        for name, prop in source.get("properties", {}).items():
            if name in without:
                continue
            member = message.fields_by_name[name]
            properties[name] = self.field(member, prop, request)
            if member.type != FieldDescriptor.TYPE_MESSAGE or member.is_repeated:
                required.append(name)  # printed even when unset; optional ones as null
        schema["properties"] = properties
        if not request:
            schema["required"] = required
            schema["additionalProperties"] = False
        return schema

    def field(self, member: FieldDescriptor, prop: dict[str, Any], request: bool) -> dict[str, Any]:
        """The JSON Schema of one field, from the plugin's property and the descriptor."""
        description = prop.get("description")
        integer = bool(option(member.GetOptions(), options_pb2.json_integer))
        entry = member.message_type
        if entry is not None and entry.GetOptions().map_entry:
            value = entry.fields_by_name["value"]
            values = self.value(value, prop.get("additionalProperties", {}), request)
            if integer and request:
                values = _amount(request)
            schema: dict[str, Any] = {"type": "object", "additionalProperties": values}
        elif member.is_repeated:
            schema = {"type": "array", "items": self.value(member, prop["items"], request)}
        else:
            schema = self.value(member, prop, request)
            if member.has_presence and member.type != FieldDescriptor.TYPE_MESSAGE:
                schema = _nullable(schema)
        if request and (example := example_of(member, integer)) is not None:
            schema = {**schema, "example": example}
        if description:
            schema = {**schema, "description": description}
        return schema

    def value(self, member: FieldDescriptor, prop: dict[str, Any], request: bool) -> dict[str, Any]:
        """The JSON Schema of one value of a field (an item, for a repeated one)."""
        if member.message_type is not None and member.message_type.full_name in _FREE_FORM:
            return dict(_FREE_FORM[member.message_type.full_name])
        if "$ref" in prop:
            return self.ref(ref_target(prop["$ref"]), request)
        if option(member.GetOptions(), options_pb2.json_integer):
            return _amount(request)
        if member.type in SIXTY_FOUR_BIT:
            return {"type": "integer", "format": "int64"}
        schema = {k: v for k, v in prop.items() if k in ("type", "format", "enum", "default")}
        if schema.get("format") in ("boolean", "string"):  # the plugin's, no JSON Schema format
            del schema["format"]
        if member.type in _INT32_RANGE and request:  # the edge refuses values beyond
            low, high = _INT32_RANGE[member.type]
            schema.update(type="integer", minimum=low, maximum=high)
            schema.pop("format", None)
        return schema


_FREE_FORM = {"google.protobuf.Struct": {"type": "object"}}
"""Protobuf's own types whose JSON is free-form, by name: their schemas."""


def _amount(request: bool) -> dict[str, Any]:
    """An arbitrary-precision integer: a JSON integer, or on requests a decimal string."""
    if request:
        return {"type": ["integer", "string"], "pattern": "^-?[0-9]+$"}
    return {"type": "integer"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        return {"anyOf": [schema, {"type": "null"}]}
    kind = schema["type"]
    return {**schema, "type": [*(kind if isinstance(kind, list) else [kind]), "null"]}


# Operations ----------------------------------------------------------------
