from google.api import annotations_pb2 as _annotations_pb2
from yieldagent.v1 import options_pb2 as _options_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ListChainsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListChainsResponse(_message.Message):
    __slots__ = ("chain_ids",)
    CHAIN_IDS_FIELD_NUMBER: _ClassVar[int]
    chain_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, chain_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class ListTokensRequest(_message.Message):
    __slots__ = ("chain_id",)
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    def __init__(self, chain_id: _Optional[int] = ...) -> None: ...

class ListTokensResponse(_message.Message):
    __slots__ = ("tokens",)
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    tokens: _containers.RepeatedCompositeFieldContainer[Token]
    def __init__(self, tokens: _Optional[_Iterable[_Union[Token, _Mapping]]] = ...) -> None: ...

class Token(_message.Message):
    __slots__ = ("address", "symbol", "decimals", "balance", "current_price")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    SYMBOL_FIELD_NUMBER: _ClassVar[int]
    DECIMALS_FIELD_NUMBER: _ClassVar[int]
    BALANCE_FIELD_NUMBER: _ClassVar[int]
    CURRENT_PRICE_FIELD_NUMBER: _ClassVar[int]
    address: str
    symbol: str
    decimals: int
    balance: float
    current_price: float
    def __init__(self, address: _Optional[str] = ..., symbol: _Optional[str] = ..., decimals: _Optional[int] = ..., balance: _Optional[float] = ..., current_price: _Optional[float] = ...) -> None: ...

class ListProtocolsRequest(_message.Message):
    __slots__ = ("chain_id", "token")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    token: str
    def __init__(self, chain_id: _Optional[int] = ..., token: _Optional[str] = ...) -> None: ...

class ListProtocolsResponse(_message.Message):
    __slots__ = ("protocols",)
    PROTOCOLS_FIELD_NUMBER: _ClassVar[int]
    protocols: _containers.RepeatedCompositeFieldContainer[Protocol]
    def __init__(self, protocols: _Optional[_Iterable[_Union[Protocol, _Mapping]]] = ...) -> None: ...

class Protocol(_message.Message):
    __slots__ = ("name", "is_active", "description", "tvl", "apr", "pools", "created_at", "updated_at", "chain_id", "parent_protocol", "link", "address", "title", "risk", "apy_base", "apy_rewards", "apy_total", "apy_net", "apy_base_7d", "apy_rewards_7d", "apy_total_7d", "apy_net_7d", "apy_base_30d", "apy_rewards_30d", "apy_total_30d", "apy_net_30d")
    NAME_FIELD_NUMBER: _ClassVar[int]
    IS_ACTIVE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TVL_FIELD_NUMBER: _ClassVar[int]
    APR_FIELD_NUMBER: _ClassVar[int]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    LINK_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    RISK_FIELD_NUMBER: _ClassVar[int]
    APY_BASE_FIELD_NUMBER: _ClassVar[int]
    APY_REWARDS_FIELD_NUMBER: _ClassVar[int]
    APY_TOTAL_FIELD_NUMBER: _ClassVar[int]
    APY_NET_FIELD_NUMBER: _ClassVar[int]
    APY_BASE_7D_FIELD_NUMBER: _ClassVar[int]
    APY_REWARDS_7D_FIELD_NUMBER: _ClassVar[int]
    APY_TOTAL_7D_FIELD_NUMBER: _ClassVar[int]
    APY_NET_7D_FIELD_NUMBER: _ClassVar[int]
    APY_BASE_30D_FIELD_NUMBER: _ClassVar[int]
    APY_REWARDS_30D_FIELD_NUMBER: _ClassVar[int]
    APY_TOTAL_30D_FIELD_NUMBER: _ClassVar[int]
    APY_NET_30D_FIELD_NUMBER: _ClassVar[int]
    name: str
    is_active: bool
    description: str
    tvl: float
    apr: float
    pools: _containers.RepeatedCompositeFieldContainer[Pool]
    created_at: str
    updated_at: str
    chain_id: int
    parent_protocol: str
    link: str
    address: str
    title: str
    risk: ProtocolRisk
    apy_base: float
    apy_rewards: float
    apy_total: float
    apy_net: float
    apy_base_7d: float
    apy_rewards_7d: float
    apy_total_7d: float
    apy_net_7d: float
    apy_base_30d: float
    apy_rewards_30d: float
    apy_total_30d: float
    apy_net_30d: float
    def __init__(self, name: _Optional[str] = ..., is_active: _Optional[bool] = ..., description: _Optional[str] = ..., tvl: _Optional[float] = ..., apr: _Optional[float] = ..., pools: _Optional[_Iterable[_Union[Pool, _Mapping]]] = ..., created_at: _Optional[str] = ..., updated_at: _Optional[str] = ..., chain_id: _Optional[int] = ..., parent_protocol: _Optional[str] = ..., link: _Optional[str] = ..., address: _Optional[str] = ..., title: _Optional[str] = ..., risk: _Optional[_Union[ProtocolRisk, _Mapping]] = ..., apy_base: _Optional[float] = ..., apy_rewards: _Optional[float] = ..., apy_total: _Optional[float] = ..., apy_net: _Optional[float] = ..., apy_base_7d: _Optional[float] = ..., apy_rewards_7d: _Optional[float] = ..., apy_total_7d: _Optional[float] = ..., apy_net_7d: _Optional[float] = ..., apy_base_30d: _Optional[float] = ..., apy_rewards_30d: _Optional[float] = ..., apy_total_30d: _Optional[float] = ..., apy_net_30d: _Optional[float] = ...) -> None: ...

class ProtocolRisk(_message.Message):
    __slots__ = ("state", "reasons")
    STATE_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    state: str
    reasons: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, state: _Optional[str] = ..., reasons: _Optional[_Iterable[str]] = ...) -> None: ...

class Pool(_message.Message):
    __slots__ = ("name", "apy")
    NAME_FIELD_NUMBER: _ClassVar[int]
    APY_FIELD_NUMBER: _ClassVar[int]
    name: str
    apy: float
    def __init__(self, name: _Optional[str] = ..., apy: _Optional[float] = ...) -> None: ...

class ListProtocolSupplyRequest(_message.Message):
    __slots__ = ("chain_id", "token")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    token: str
    def __init__(self, chain_id: _Optional[int] = ..., token: _Optional[str] = ...) -> None: ...

class ListProtocolSupplyResponse(_message.Message):
    __slots__ = ("protocols",)
    PROTOCOLS_FIELD_NUMBER: _ClassVar[int]
    protocols: _containers.RepeatedCompositeFieldContainer[ProtocolSupply]
    def __init__(self, protocols: _Optional[_Iterable[_Union[ProtocolSupply, _Mapping]]] = ...) -> None: ...

class ProtocolSupply(_message.Message):
    __slots__ = ("protocol", "supply", "tokens", "supply_amount")
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    SUPPLY_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    SUPPLY_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    protocol: str
    supply: float
    tokens: _containers.RepeatedScalarFieldContainer[str]
    supply_amount: str
    def __init__(self, protocol: _Optional[str] = ..., supply: _Optional[float] = ..., tokens: _Optional[_Iterable[str]] = ..., supply_amount: _Optional[str] = ...) -> None: ...
