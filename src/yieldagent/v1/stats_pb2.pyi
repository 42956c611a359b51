from google.api import annotations_pb2 as _annotations_pb2
from yieldagent.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetStatsRequest(_message.Message):
    __slots__ = ("chain_id",)
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    def __init__(self, chain_id: _Optional[int] = ...) -> None: ...

class GetStatsResponse(_message.Message):
    __slots__ = ("total_balance", "total_deposits", "total_users", "total_transactions", "total_apr", "liquidity_distribution")
    TOTAL_BALANCE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_DEPOSITS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_USERS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TRANSACTIONS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_APR_FIELD_NUMBER: _ClassVar[int]
    LIQUIDITY_DISTRIBUTION_FIELD_NUMBER: _ClassVar[int]
    total_balance: float
    total_deposits: float
    total_users: int
    total_transactions: int
    total_apr: float
    liquidity_distribution: LiquidityDistribution
    def __init__(self, total_balance: _Optional[float] = ..., total_deposits: _Optional[float] = ..., total_users: _Optional[int] = ..., total_transactions: _Optional[int] = ..., total_apr: _Optional[float] = ..., liquidity_distribution: _Optional[_Union[LiquidityDistribution, _Mapping]] = ...) -> None: ...

class LiquidityDistribution(_message.Message):
    __slots__ = ("initial_deposits", "current_tokens", "protocols")
    INITIAL_DEPOSITS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    PROTOCOLS_FIELD_NUMBER: _ClassVar[int]
    initial_deposits: _containers.RepeatedCompositeFieldContainer[_types_pb2.TokenAmount]
    current_tokens: _containers.RepeatedCompositeFieldContainer[_types_pb2.TokenAmount]
    protocols: _containers.RepeatedCompositeFieldContainer[ProtocolBalances]
    def __init__(self, initial_deposits: _Optional[_Iterable[_Union[_types_pb2.TokenAmount, _Mapping]]] = ..., current_tokens: _Optional[_Iterable[_Union[_types_pb2.TokenAmount, _Mapping]]] = ..., protocols: _Optional[_Iterable[_Union[ProtocolBalances, _Mapping]]] = ...) -> None: ...

class ProtocolBalances(_message.Message):
    __slots__ = ("protocol", "balances", "percentage")
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    BALANCES_FIELD_NUMBER: _ClassVar[int]
    PERCENTAGE_FIELD_NUMBER: _ClassVar[int]
    protocol: str
    balances: _containers.RepeatedCompositeFieldContainer[_types_pb2.TokenAmount]
    percentage: float
    def __init__(self, protocol: _Optional[str] = ..., balances: _Optional[_Iterable[_Union[_types_pb2.TokenAmount, _Mapping]]] = ..., percentage: _Optional[float] = ...) -> None: ...
