from google.api import annotations_pb2 as _annotations_pb2
from yieldagent.v1 import options_pb2 as _options_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class CreateSmartAccountRequest(_message.Message):
    __slots__ = ("eoa", "chain", "agent_id")
    EOA_FIELD_NUMBER: _ClassVar[int]
    CHAIN_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    eoa: str
    chain: int
    agent_id: str
    def __init__(self, eoa: _Optional[str] = ..., chain: _Optional[int] = ..., agent_id: _Optional[str] = ...) -> None: ...

class CreateSmartAccountResponse(_message.Message):
    __slots__ = ("smartAccount", "backendWallet")
    SMARTACCOUNT_FIELD_NUMBER: _ClassVar[int]
    BACKENDWALLET_FIELD_NUMBER: _ClassVar[int]
    smartAccount: str
    backendWallet: str
    def __init__(self, smartAccount: _Optional[str] = ..., backendWallet: _Optional[str] = ...) -> None: ...

class GetSmartAccountRequest(_message.Message):
    __slots__ = ("eoa", "chain", "agent_id")
    EOA_FIELD_NUMBER: _ClassVar[int]
    CHAIN_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    eoa: str
    chain: int
    agent_id: str
    def __init__(self, eoa: _Optional[str] = ..., chain: _Optional[int] = ..., agent_id: _Optional[str] = ...) -> None: ...

class GetSmartAccountResponse(_message.Message):
    __slots__ = ("smartAccount", "backendWallet")
    SMARTACCOUNT_FIELD_NUMBER: _ClassVar[int]
    BACKENDWALLET_FIELD_NUMBER: _ClassVar[int]
    smartAccount: str
    backendWallet: str
    def __init__(self, smartAccount: _Optional[str] = ..., backendWallet: _Optional[str] = ...) -> None: ...

class CreateSafeAccountRequest(_message.Message):
    __slots__ = ("eoa", "chain", "agent_id")
    EOA_FIELD_NUMBER: _ClassVar[int]
    CHAIN_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    eoa: str
    chain: int
    agent_id: str
    def __init__(self, eoa: _Optional[str] = ..., chain: _Optional[int] = ..., agent_id: _Optional[str] = ...) -> None: ...

class CreateSafeAccountResponse(_message.Message):
    __slots__ = ("smartAccount", "backendWallet")
    SMARTACCOUNT_FIELD_NUMBER: _ClassVar[int]
    BACKENDWALLET_FIELD_NUMBER: _ClassVar[int]
    smartAccount: str
    backendWallet: str
    def __init__(self, smartAccount: _Optional[str] = ..., backendWallet: _Optional[str] = ...) -> None: ...

class GetSafeAccountRequest(_message.Message):
    __slots__ = ("eoa", "chain", "agent_id")
    EOA_FIELD_NUMBER: _ClassVar[int]
    CHAIN_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    eoa: str
    chain: int
    agent_id: str
    def __init__(self, eoa: _Optional[str] = ..., chain: _Optional[int] = ..., agent_id: _Optional[str] = ...) -> None: ...

class GetSafeAccountResponse(_message.Message):
    __slots__ = ("smartAccount", "backendWallet")
    SMARTACCOUNT_FIELD_NUMBER: _ClassVar[int]
    BACKENDWALLET_FIELD_NUMBER: _ClassVar[int]
    smartAccount: str
    backendWallet: str
    def __init__(self, smartAccount: _Optional[str] = ..., backendWallet: _Optional[str] = ...) -> None: ...
