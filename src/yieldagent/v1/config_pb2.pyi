from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetConfigRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetConfigResponse(_message.Message):
    __slots__ = ("min_withdraw_usd", "optimizer_threshold_usd", "max_protocol_liquidity_percentage", "constraints", "chains", "pending_admin_changes", "wallet_money_calls_per_minute")
    class ChainsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ChainConfig
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ChainConfig, _Mapping]] = ...) -> None: ...
    MIN_WITHDRAW_USD_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZER_THRESHOLD_USD_FIELD_NUMBER: _ClassVar[int]
    MAX_PROTOCOL_LIQUIDITY_PERCENTAGE_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    CHAINS_FIELD_NUMBER: _ClassVar[int]
    PENDING_ADMIN_CHANGES_FIELD_NUMBER: _ClassVar[int]
    WALLET_MONEY_CALLS_PER_MINUTE_FIELD_NUMBER: _ClassVar[int]
    min_withdraw_usd: float
    optimizer_threshold_usd: float
    max_protocol_liquidity_percentage: float
    constraints: ConstraintsConfig
    chains: _containers.MessageMap[str, ChainConfig]
    pending_admin_changes: _containers.RepeatedCompositeFieldContainer[PendingAdminChange]
    wallet_money_calls_per_minute: int
    def __init__(self, min_withdraw_usd: _Optional[float] = ..., optimizer_threshold_usd: _Optional[float] = ..., max_protocol_liquidity_percentage: _Optional[float] = ..., constraints: _Optional[_Union[ConstraintsConfig, _Mapping]] = ..., chains: _Optional[_Mapping[str, ChainConfig]] = ..., pending_admin_changes: _Optional[_Iterable[_Union[PendingAdminChange, _Mapping]]] = ..., wallet_money_calls_per_minute: _Optional[int] = ...) -> None: ...

class ConstraintsConfig(_message.Message):
    __slots__ = ("kinds", "default_min_fraction_per_protocol")
    class KindsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ConstraintKind
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ConstraintKind, _Mapping]] = ...) -> None: ...
    KINDS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_MIN_FRACTION_PER_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    kinds: _containers.MessageMap[str, ConstraintKind]
    default_min_fraction_per_protocol: float
    def __init__(self, kinds: _Optional[_Mapping[str, ConstraintKind]] = ..., default_min_fraction_per_protocol: _Optional[float] = ...) -> None: ...

class ConstraintKind(_message.Message):
    __slots__ = ("params", "optional_params")
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_PARAMS_FIELD_NUMBER: _ClassVar[int]
    params: _containers.RepeatedScalarFieldContainer[str]
    optional_params: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, params: _Optional[_Iterable[str]] = ..., optional_params: _Optional[_Iterable[str]] = ...) -> None: ...

class ChainConfig(_message.Message):
    __slots__ = ("chain_id", "name", "tokens", "protocols")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    PROTOCOLS_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    name: str
    tokens: _containers.RepeatedScalarFieldContainer[str]
    protocols: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, chain_id: _Optional[int] = ..., name: _Optional[str] = ..., tokens: _Optional[_Iterable[str]] = ..., protocols: _Optional[_Iterable[str]] = ...) -> None: ...

class PendingAdminChange(_message.Message):
    __slots__ = ("chain_id", "module", "change_id", "kind", "subject", "selector", "new_value", "proposed_at", "effective_at", "line")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    MODULE_FIELD_NUMBER: _ClassVar[int]
    CHANGE_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    NEW_VALUE_FIELD_NUMBER: _ClassVar[int]
    PROPOSED_AT_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_AT_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    module: str
    change_id: str
    kind: str
    subject: str
    selector: str
    new_value: str
    proposed_at: str
    effective_at: str
    line: str
    def __init__(self, chain_id: _Optional[int] = ..., module: _Optional[str] = ..., change_id: _Optional[str] = ..., kind: _Optional[str] = ..., subject: _Optional[str] = ..., selector: _Optional[str] = ..., new_value: _Optional[str] = ..., proposed_at: _Optional[str] = ..., effective_at: _Optional[str] = ..., line: _Optional[str] = ...) -> None: ...
