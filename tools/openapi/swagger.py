"""Runs protoc-gen-swagger (grpc-gateway v1.6.4) on the API's protos.

Debian bookworm's ``golang-grpc-gateway`` ships ``protoc-gen-swagger``, the v1 name of
``protoc-gen-openapiv2``: it writes one Swagger 2.0 document per proto file from the
``google.api.http`` rules and the comments. It predates three things the API uses, so
this module hands it the protos through a plugin request of its own (protobuf's
``CodeGeneratorRequest``, built from the descriptor set that ``make`` builds with
comments included) and disguises what it cannot read. ``tools.openapi.generate`` undoes
each disguise from the real http rules:

- proto3 ``optional`` fields: the plugin does not declare the feature, so protoc
  refuses to run it. Called directly, it reads them as plain fields.
- query parameters: it lists them only for GET and DELETE. A body-less rule of another
  verb (``:run``, ``:top-up``) is handed over as DELETE, which no API method uses.
- a body naming a repeated field (``body: "protocols"``) makes it fail. Such a rule is
  handed over without a body (and so as DELETE): the field comes out as a query
  parameter, which ``tools.openapi.generate`` turns back into the JSON array body.

Merging files (``allow_merge``) drops the comments of every file's methods but the
first one's, so each file is generated alone and the documents are merged here. The
plugin tags each operation with its service but describes no tag: the merged document
gets a tag per service, described by the service's comment.
Methods without an http rule (streaming ones, say) have no REST route: the plugin
skips them, as the edge does.

Comments become descriptions, so the plugin is handed them without the lines that
speak to tools (``buf:lint:ignore ...`` and the like, ``PRAGMA``): buf reads those in
the protos themselves.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from google.api import annotations_pb2  # registers the http option before parsing
from google.protobuf import descriptor_pb2
from google.protobuf.compiler import plugin_pb2

PLUGIN = "protoc-gen-swagger"
"""The plugin's command; Debian installs it as /usr/bin/protoc-gen-swagger."""
PARAMETERS = "json_names_for_fields=false"
"""The REST edge prints proto field names (``preserve_proto_field_names``)."""
API_PREFIX = "yieldagent/"
DISGUISE_VERB = "delete"

_VERBS = ("get", "put", "post", "delete", "patch")

PRAGMA = re.compile(
    r"^\s*(buf:lint:|buf:breaking:|api-linter:|protolint:|nolint\b|noqa\b|@ts-ignore|"
    r"eslint-disable|type:\s*ignore)",
    re.IGNORECASE,
)
"""A comment line addressed to a tool (a linter's ignore, say), not to a reader."""


def without_pragmas(comment: str) -> str:
    """A comment less its lines addressed to tools (``PRAGMA``)."""
    return "".join(line for line in comment.splitlines(keepends=True) if not PRAGMA.match(line))


def handed_over(verb: str, body: str, repeated_body: bool) -> tuple[str, str]:
    """The verb and body the plugin is shown for an http rule (see the module doc)."""
    if repeated_body:
        body = ""
    if verb != "get" and body == "":
        verb = DISGUISE_VERB
    return verb, body


def _disguise(method: descriptor_pb2.MethodDescriptorProto, messages: dict[str, Any]) -> None:
    """Rewrites an http rule the plugin cannot read into one it can."""
    rule = method.options.Extensions[annotations_pb2.http]
    verb = rule.WhichOneof("pattern")
    if verb is None:
        return
    if verb == DISGUISE_VERB or verb not in _VERBS:
        raise ValueError(f"{method.name}: the {verb} pattern is not supported")
    template = getattr(rule, verb)
    repeated = False
    if rule.body not in ("", "*"):
        request = messages[method.input_type.lstrip(".")]
        body = next(f for f in request.field if f.name == rule.body)
        repeated = body.label == descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
    shown_verb, rule.body = handed_over(verb, rule.body, repeated)
    if shown_verb != verb:
        setattr(rule, shown_verb, template)  # clears the real verb: the pattern is a oneof


def plugin_request(descriptor_set: bytes) -> plugin_pb2.CodeGeneratorRequest:
    """The plugin request for every ``yieldagent/`` proto of a descriptor set."""
    files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set)
    request = plugin_pb2.CodeGeneratorRequest(parameter=PARAMETERS)
    messages: dict[str, Any] = {}
    for source in files.file:
        for message in source.message_type:
            messages[f"{source.package}.{message.name}"] = message
    for source in files.file:  # protoc lists imports first, as the plugin expects
        copy = request.proto_file.add()
        copy.CopyFrom(source)
        if source.name.startswith(API_PREFIX):
            request.file_to_generate.append(source.name)
            for location in copy.source_code_info.location:
                location.leading_comments = without_pragmas(location.leading_comments)
                location.trailing_comments = without_pragmas(location.trailing_comments)
            for service in copy.service:
                for method in service.method:
                    _disguise(method, messages)
    return request


_SERVICE_FIELD = 6  # FileDescriptorProto.service, in source locations


def service_tags(request: plugin_pb2.CodeGeneratorRequest) -> list[dict[str, str]]:
    """A Swagger tag per service of the files to generate, described by its comment."""
    tags = []
    for source in request.proto_file:
        if source.name not in request.file_to_generate:
            continue
        comments = {
            tuple(location.path): location.leading_comments
            for location in source.source_code_info.location
        }
        for index, service in enumerate(source.service):
            comment = comments.get((_SERVICE_FIELD, index), "")
            tags.append({"name": service.name, "description": comment.strip()})
    return tags


def _merge(documents: list[dict[str, Any]], tags: list[dict[str, str]]) -> dict[str, Any]:
    merged: dict[str, Any] = {"swagger": "2.0", "tags": tags, "paths": {}, "definitions": {}}
    for document in documents:
        for path, operations in document.get("paths", {}).items():
            merged["paths"].setdefault(path, {}).update(operations)
        merged["definitions"].update(document.get("definitions", {}))
    merged["paths"] = dict(sorted(merged["paths"].items()))
    merged["definitions"] = dict(sorted(merged["definitions"].items()))
    return merged


def generate(descriptor_set: Path, plugin: str = PLUGIN) -> dict[str, Any]:
    """The plugin's Swagger 2.0 documents for the API's protos, merged into one."""
    request = plugin_request(descriptor_set.read_bytes())
    ran = subprocess.run(
        [plugin], input=request.SerializeToString(), capture_output=True, check=False
    )
    if ran.returncode != 0:
        raise RuntimeError(f"{plugin} failed: {ran.stderr.decode(errors='replace')}")
    response = plugin_pb2.CodeGeneratorResponse.FromString(ran.stdout)
    if response.error:
        raise RuntimeError(f"{plugin}: {response.error}")
    return _merge([json.loads(file.content) for file in response.file], service_tags(request))
