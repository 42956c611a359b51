from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from yieldagent.v1 import catalog_pb2 as _catalog_pb2
from yieldagent.v1 import options_pb2 as _options_pb2
from yieldagent.v1 import types_pb2 as _types_pb2
from yieldagent.v1 import wallets_pb2 as _wallets_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ListDepositsRequest(_message.Message):
    __slots__ = ("chain_id", "wallet")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ...) -> None: ...

class ListDepositsResponse(_message.Message):
    __slots__ = ("deposits",)
    DEPOSITS_FIELD_NUMBER: _ClassVar[int]
    deposits: _containers.RepeatedCompositeFieldContainer[_types_pb2.Deposit]
    def __init__(self, deposits: _Optional[_Iterable[_Union[_types_pb2.Deposit, _Mapping]]] = ...) -> None: ...

class ListWalletProtocolsRequest(_message.Message):
    __slots__ = ("chain_id", "wallet")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ...) -> None: ...

class ListWalletProtocolsResponse(_message.Message):
    __slots__ = ("protocols",)
    PROTOCOLS_FIELD_NUMBER: _ClassVar[int]
    protocols: _containers.RepeatedCompositeFieldContainer[_catalog_pb2.Protocol]
    def __init__(self, protocols: _Optional[_Iterable[_Union[_catalog_pb2.Protocol, _Mapping]]] = ...) -> None: ...

class GetConstraintsRequest(_message.Message):
    __slots__ = ("chain_id", "wallet")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ...) -> None: ...

class GetConstraintsResponse(_message.Message):
    __slots__ = ("constraints",)
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    constraints: _containers.RepeatedCompositeFieldContainer[_types_pb2.Constraint]
    def __init__(self, constraints: _Optional[_Iterable[_Union[_types_pb2.Constraint, _Mapping]]] = ...) -> None: ...

class UpdateConstraintsRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "constraints")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    constraints: _containers.RepeatedCompositeFieldContainer[_types_pb2.Constraint]
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., constraints: _Optional[_Iterable[_Union[_types_pb2.Constraint, _Mapping]]] = ...) -> None: ...

class UpdateConstraintsResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetWhitelistRequest(_message.Message):
    __slots__ = ("chain_id", "wallet")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ...) -> None: ...

class GetWhitelistResponse(_message.Message):
    __slots__ = ("whitelist",)
    WHITELIST_FIELD_NUMBER: _ClassVar[int]
    whitelist: _containers.RepeatedCompositeFieldContainer[WhitelistEntry]
    def __init__(self, whitelist: _Optional[_Iterable[_Union[WhitelistEntry, _Mapping]]] = ...) -> None: ...

class WhitelistEntry(_message.Message):
    __slots__ = ("address", "role", "protocol")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    address: str
    role: str
    protocol: str
    def __init__(self, address: _Optional[str] = ..., role: _Optional[str] = ..., protocol: _Optional[str] = ...) -> None: ...

class GetFeeRequest(_message.Message):
    __slots__ = ("chain_id", "wallet")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ...) -> None: ...

class GetFeeResponse(_message.Message):
    __slots__ = ("percentage_fee", "fee", "fee_amount", "charged_amount", "token")
    PERCENTAGE_FEE_FIELD_NUMBER: _ClassVar[int]
    FEE_FIELD_NUMBER: _ClassVar[int]
    FEE_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    CHARGED_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    percentage_fee: float
    fee: float
    fee_amount: str
    charged_amount: str
    token: str
    def __init__(self, percentage_fee: _Optional[float] = ..., fee: _Optional[float] = ..., fee_amount: _Optional[str] = ..., charged_amount: _Optional[str] = ..., token: _Optional[str] = ...) -> None: ...

class GetDepositLimitRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "eoa")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    EOA_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    eoa: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., eoa: _Optional[str] = ...) -> None: ...

class GetDepositLimitResponse(_message.Message):
    __slots__ = ("limit", "limit_usd", "token")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    LIMIT_USD_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    limit: str
    limit_usd: float
    token: str
    def __init__(self, limit: _Optional[str] = ..., limit_usd: _Optional[float] = ..., token: _Optional[str] = ...) -> None: ...

class ListExecutionsRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "page", "limit", "sort")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    SORT_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    page: int
    limit: int
    sort: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., page: _Optional[int] = ..., limit: _Optional[int] = ..., sort: _Optional[str] = ...) -> None: ...

class ListExecutionsResponse(_message.Message):
    __slots__ = ("executions", "pagination")
    EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    executions: _containers.RepeatedCompositeFieldContainer[Execution]
    pagination: _types_pb2.Pagination
    def __init__(self, executions: _Optional[_Iterable[_Union[Execution, _Mapping]]] = ..., pagination: _Optional[_Union[_types_pb2.Pagination, _Mapping]] = ...) -> None: ...

class Execution(_message.Message):
    __slots__ = ("id", "execution_plan", "execution_type", "status", "created_at", "transactions", "outcome", "reason", "finished_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_PLAN_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    execution_plan: ExecutionPlan
    execution_type: str
    status: str
    created_at: str
    transactions: _containers.RepeatedCompositeFieldContainer[_wallets_pb2.Transaction]
    outcome: str
    reason: str
    finished_at: str
    def __init__(self, id: _Optional[str] = ..., execution_plan: _Optional[_Union[ExecutionPlan, _Mapping]] = ..., execution_type: _Optional[str] = ..., status: _Optional[str] = ..., created_at: _Optional[str] = ..., transactions: _Optional[_Iterable[_Union[_wallets_pb2.Transaction, _Mapping]]] = ..., outcome: _Optional[str] = ..., reason: _Optional[str] = ..., finished_at: _Optional[str] = ...) -> None: ...

class ExecutionPlan(_message.Message):
    __slots__ = ("moves",)
    MOVES_FIELD_NUMBER: _ClassVar[int]
    moves: _containers.RepeatedCompositeFieldContainer[PlannedMove]
    def __init__(self, moves: _Optional[_Iterable[_Union[PlannedMove, _Mapping]]] = ...) -> None: ...

class PlannedMove(_message.Message):
    __slots__ = ("action", "protocol", "amount")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    action: str
    protocol: str
    amount: str
    def __init__(self, action: _Optional[str] = ..., protocol: _Optional[str] = ..., amount: _Optional[str] = ...) -> None: ...

class ListExecutionLogsRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "execution_id", "page", "limit", "sort")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    SORT_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    execution_id: str
    page: int
    limit: int
    sort: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., execution_id: _Optional[str] = ..., page: _Optional[int] = ..., limit: _Optional[int] = ..., sort: _Optional[str] = ...) -> None: ...

class ListExecutionLogsResponse(_message.Message):
    __slots__ = ("logs", "pagination")
    LOGS_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    logs: _containers.RepeatedCompositeFieldContainer[LogEntry]
    pagination: _types_pb2.Pagination
    def __init__(self, logs: _Optional[_Iterable[_Union[LogEntry, _Mapping]]] = ..., pagination: _Optional[_Union[_types_pb2.Pagination, _Mapping]] = ...) -> None: ...

class ListWalletLogsRequest(_message.Message):
    __slots__ = ("chain_id", "wallet", "page", "limit", "sort")
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    WALLET_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    SORT_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    wallet: str
    page: int
    limit: int
    sort: str
    def __init__(self, chain_id: _Optional[int] = ..., wallet: _Optional[str] = ..., page: _Optional[int] = ..., limit: _Optional[int] = ..., sort: _Optional[str] = ...) -> None: ...

class ListWalletLogsResponse(_message.Message):
    __slots__ = ("logs", "pagination")
    LOGS_FIELD_NUMBER: _ClassVar[int]
    PAGINATION_FIELD_NUMBER: _ClassVar[int]
    logs: _containers.RepeatedCompositeFieldContainer[LogEntry]
    pagination: _types_pb2.Pagination
    def __init__(self, logs: _Optional[_Iterable[_Union[LogEntry, _Mapping]]] = ..., pagination: _Optional[_Union[_types_pb2.Pagination, _Mapping]] = ...) -> None: ...

class LogEntry(_message.Message):
    __slots__ = ("type", "data")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    type: str
    data: _struct_pb2.Struct
    def __init__(self, type: _Optional[str] = ..., data: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...
