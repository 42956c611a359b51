from google.api import annotations_pb2 as _annotations_pb2
from yieldagent.v1 import options_pb2 as _options_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

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
