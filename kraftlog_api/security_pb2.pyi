from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class SaslHandshakeRequest(_message.Message):
    __slots__ = ("mechanism",)
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    mechanism: str
    def __init__(self, mechanism: _Optional[str] = ...) -> None: ...

class SaslHandshakeResponse(_message.Message):
    __slots__ = ("error_code", "mechanisms", "exchange_id")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    MECHANISMS_FIELD_NUMBER: _ClassVar[int]
    EXCHANGE_ID_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    mechanisms: _containers.RepeatedScalarFieldContainer[str]
    exchange_id: bytes
    def __init__(self, error_code: _Optional[int] = ..., mechanisms: _Optional[_Iterable[str]] = ..., exchange_id: _Optional[bytes] = ...) -> None: ...

class SaslAuthenticateRequest(_message.Message):
    __slots__ = ("exchange_id", "auth_bytes")
    EXCHANGE_ID_FIELD_NUMBER: _ClassVar[int]
    AUTH_BYTES_FIELD_NUMBER: _ClassVar[int]
    exchange_id: bytes
    auth_bytes: bytes
    def __init__(self, exchange_id: _Optional[bytes] = ..., auth_bytes: _Optional[bytes] = ...) -> None: ...

class SaslAuthenticateResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "auth_bytes", "session_lifetime_ms", "session_credential")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    AUTH_BYTES_FIELD_NUMBER: _ClassVar[int]
    SESSION_LIFETIME_MS_FIELD_NUMBER: _ClassVar[int]
    SESSION_CREDENTIAL_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    auth_bytes: bytes
    session_lifetime_ms: int
    session_credential: bytes
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., auth_bytes: _Optional[bytes] = ..., session_lifetime_ms: _Optional[int] = ..., session_credential: _Optional[bytes] = ...) -> None: ...
