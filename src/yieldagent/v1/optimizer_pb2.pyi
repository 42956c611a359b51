from google.api import annotations_pb2 as _annotations_pb2
from yieldagent.v1 import options_pb2 as _options_pb2
from yieldagent.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OptimizeRequest(_message.Message):
    __slots__ = ("chain_id", "total_capital", "token_address", "current_allocations", "protocols", "constraints", "wallet_address")
    class CurrentAllocationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    TOTAL_CAPITAL_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    PROTOCOLS_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    WALLET_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    chain_id: int
    total_capital: str
    token_address: str
    current_allocations: _containers.ScalarMap[str, str]
    protocols: _containers.RepeatedScalarFieldContainer[str]
    constraints: _containers.RepeatedCompositeFieldContainer[_types_pb2.Constraint]
    wallet_address: str
    def __init__(self, chain_id: _Optional[int] = ..., total_capital: _Optional[str] = ..., token_address: _Optional[str] = ..., current_allocations: _Optional[_Mapping[str, str]] = ..., protocols: _Optional[_Iterable[str]] = ..., constraints: _Optional[_Iterable[_Union[_types_pb2.Constraint, _Mapping]]] = ..., wallet_address: _Optional[str] = ...) -> None: ...

class OptimizeResponse(_message.Message):
    __slots__ = ("optimization_result", "action_plan", "calldata")
    OPTIMIZATION_RESULT_FIELD_NUMBER: _ClassVar[int]
    ACTION_PLAN_FIELD_NUMBER: _ClassVar[int]
    CALLDATA_FIELD_NUMBER: _ClassVar[int]
    optimization_result: OptimizationResult
    action_plan: _containers.RepeatedCompositeFieldContainer[PlannedAction]
    calldata: _containers.RepeatedCompositeFieldContainer[Calldata]
    def __init__(self, optimization_result: _Optional[_Union[OptimizationResult, _Mapping]] = ..., action_plan: _Optional[_Iterable[_Union[PlannedAction, _Mapping]]] = ..., calldata: _Optional[_Iterable[_Union[Calldata, _Mapping]]] = ...) -> None: ...

class OptimizationResult(_message.Message):
    __slots__ = ("allocations", "total_costs", "weighted_apr_initial", "weighted_apr_final", "apr_improvement", "gas_estimate_usd", "break_even_days")
    ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_COSTS_FIELD_NUMBER: _ClassVar[int]
    WEIGHTED_APR_INITIAL_FIELD_NUMBER: _ClassVar[int]
    WEIGHTED_APR_FINAL_FIELD_NUMBER: _ClassVar[int]
    APR_IMPROVEMENT_FIELD_NUMBER: _ClassVar[int]
    GAS_ESTIMATE_USD_FIELD_NUMBER: _ClassVar[int]
    BREAK_EVEN_DAYS_FIELD_NUMBER: _ClassVar[int]
    allocations: _containers.RepeatedCompositeFieldContainer[Allocation]
    total_costs: float
    weighted_apr_initial: float
    weighted_apr_final: float
    apr_improvement: float
    gas_estimate_usd: float
    break_even_days: float
    def __init__(self, allocations: _Optional[_Iterable[_Union[Allocation, _Mapping]]] = ..., total_costs: _Optional[float] = ..., weighted_apr_initial: _Optional[float] = ..., weighted_apr_final: _Optional[float] = ..., apr_improvement: _Optional[float] = ..., gas_estimate_usd: _Optional[float] = ..., break_even_days: _Optional[float] = ...) -> None: ...

class Allocation(_message.Message):
    __slots__ = ("protocol", "allocation", "apr")
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    APR_FIELD_NUMBER: _ClassVar[int]
    protocol: str
    allocation: str
    apr: float
    def __init__(self, protocol: _Optional[str] = ..., allocation: _Optional[str] = ..., apr: _Optional[float] = ...) -> None: ...

class PlannedAction(_message.Message):
    __slots__ = ("action_type", "protocol", "amount", "underlying_amount")
    ACTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    UNDERLYING_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    action_type: str
    protocol: str
    amount: str
    underlying_amount: str
    def __init__(self, action_type: _Optional[str] = ..., protocol: _Optional[str] = ..., amount: _Optional[str] = ..., underlying_amount: _Optional[str] = ...) -> None: ...

class Calldata(_message.Message):
    __slots__ = ("contract_address", "function_name", "parameters", "value", "protocol", "description", "data")
    CONTRACT_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    contract_address: str
    function_name: str
    parameters: _containers.RepeatedScalarFieldContainer[str]
    value: str
    protocol: str
    description: str
    data: str
    def __init__(self, contract_address: _Optional[str] = ..., function_name: _Optional[str] = ..., parameters: _Optional[_Iterable[str]] = ..., value: _Optional[str] = ..., protocol: _Optional[str] = ..., description: _Optional[str] = ..., data: _Optional[str] = ...) -> None: ...
