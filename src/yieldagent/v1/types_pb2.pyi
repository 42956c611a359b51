from yieldagent.v1 import options_pb2 as _options_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Pagination(_message.Message):
    __slots__ = ("total_items", "total_pages", "current_page", "items_per_page", "page")
    TOTAL_ITEMS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_PAGES_FIELD_NUMBER: _ClassVar[int]
    CURRENT_PAGE_FIELD_NUMBER: _ClassVar[int]
    ITEMS_PER_PAGE_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    total_items: int
    total_pages: int
    current_page: int
    items_per_page: int
    page: int
    def __init__(self, total_items: _Optional[int] = ..., total_pages: _Optional[int] = ..., current_page: _Optional[int] = ..., items_per_page: _Optional[int] = ..., page: _Optional[int] = ...) -> None: ...

class TokenAmount(_message.Message):
    __slots__ = ("token", "amount", "percentage")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    PERCENTAGE_FIELD_NUMBER: _ClassVar[int]
    token: str
    amount: float
    percentage: float
    def __init__(self, token: _Optional[str] = ..., amount: _Optional[float] = ..., percentage: _Optional[float] = ...) -> None: ...

class Deposit(_message.Message):
    __slots__ = ("amount", "token_type", "date", "tx_hash", "block_number")
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_TYPE_FIELD_NUMBER: _ClassVar[int]
    DATE_FIELD_NUMBER: _ClassVar[int]
    TX_HASH_FIELD_NUMBER: _ClassVar[int]
    BLOCK_NUMBER_FIELD_NUMBER: _ClassVar[int]
    amount: str
    token_type: str
    date: str
    tx_hash: str
    block_number: int
    def __init__(self, amount: _Optional[str] = ..., token_type: _Optional[str] = ..., date: _Optional[str] = ..., tx_hash: _Optional[str] = ..., block_number: _Optional[int] = ...) -> None: ...

class WithdrawDetail(_message.Message):
    __slots__ = ("token", "amount", "value", "value_in_usd", "principal_amount", "yield_amount", "fee_amount", "tx_hash", "block_number", "date")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    VALUE_IN_USD_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    YIELD_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    FEE_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    TX_HASH_FIELD_NUMBER: _ClassVar[int]
    BLOCK_NUMBER_FIELD_NUMBER: _ClassVar[int]
    DATE_FIELD_NUMBER: _ClassVar[int]
    token: str
    amount: str
    value: float
    value_in_usd: float
    principal_amount: str
    yield_amount: str
    fee_amount: str
    tx_hash: str
    block_number: int
    date: str
    def __init__(self, token: _Optional[str] = ..., amount: _Optional[str] = ..., value: _Optional[float] = ..., value_in_usd: _Optional[float] = ..., principal_amount: _Optional[str] = ..., yield_amount: _Optional[str] = ..., fee_amount: _Optional[str] = ..., tx_hash: _Optional[str] = ..., block_number: _Optional[int] = ..., date: _Optional[str] = ...) -> None: ...

class Constraint(_message.Message):
    __slots__ = ("kind", "params")
    KIND_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    kind: str
    params: ConstraintParams
    def __init__(self, kind: _Optional[str] = ..., params: _Optional[_Union[ConstraintParams, _Mapping]] = ...) -> None: ...

class ConstraintParams(_message.Message):
    __slots__ = ("min_protocols", "min_fraction_per_protocol", "protocol", "max_amount", "max_ratio", "min_amount")
    MIN_PROTOCOLS_FIELD_NUMBER: _ClassVar[int]
    MIN_FRACTION_PER_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    MAX_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    MAX_RATIO_FIELD_NUMBER: _ClassVar[int]
    MIN_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    min_protocols: int
    min_fraction_per_protocol: float
    protocol: str
    max_amount: str
    max_ratio: float
    min_amount: str
    def __init__(self, min_protocols: _Optional[int] = ..., min_fraction_per_protocol: _Optional[float] = ..., protocol: _Optional[str] = ..., max_amount: _Optional[str] = ..., max_ratio: _Optional[float] = ..., min_amount: _Optional[str] = ...) -> None: ...
