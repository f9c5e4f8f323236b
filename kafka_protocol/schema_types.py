"""Kafka's message-schema primitives (its protocol `types`), as its
generated serializers write them: big-endian fixed-width integers, strings with an int16 length
(non-flexible versions), and in flexible versions compact strings and
arrays (unsigned varint length + 1, 0 for null) followed by a tagged-field
section (count, then per field: tag, size, bytes; tags ascending). Readers
skip tags they do not know, so records written by a newer Kafka version
still decode.

Used for the `__consumer_offsets` key and value schemas today
(broker/groups/records.py) and the `__transaction_state` records
(broker/transactions/records.py); Kafka's wire-protocol messages are made of the
same primitives.
"""
from __future__ import annotations

import struct
from typing import Callable, Optional, Sequence, TypeVar

from .errors import CorruptRecordError
from .varint import read_unsigned_varint, unsigned_varint_bytes

T = TypeVar("T")

_I8, _I16, _I32, _I64 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


class SchemaError(ValueError):
    """Bytes that do not decode under the expected schema."""


class Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def int8(self, v: int) -> "Writer":
        self.out += _I8.pack(v)
        return self

    def int16(self, v: int) -> "Writer":
        self.out += _I16.pack(v)
        return self

    def int32(self, v: int) -> "Writer":
        self.out += _I32.pack(v)
        return self

    def int64(self, v: int) -> "Writer":
        self.out += _I64.pack(v)
        return self

    def uvarint(self, v: int) -> "Writer":
        self.out += unsigned_varint_bytes(v)
        return self

    def string(self, v: str) -> "Writer":
        data = v.encode()
        return self.int16(len(data)).raw(data)

    def compact_string(self, v: Optional[str]) -> "Writer":
        if v is None:
            return self.uvarint(0)
        data = v.encode()
        return self.uvarint(len(data) + 1).raw(data)

    def compact_array(self, items: Sequence[T], write: Callable[["Writer", T], object]) -> "Writer":
        self.uvarint(len(items) + 1)
        for item in items:
            write(self, item)
        return self

    def uuid(self, v: bytes) -> "Writer":
        if len(v) != 16:
            raise SchemaError(f"a uuid is 16 bytes, not {len(v)}")
        return self.raw(v)

    def no_tagged_fields(self) -> "Writer":
        return self.uvarint(0)

    def tagged_fields(self, fields: dict[int, bytes]) -> "Writer":
        """The section with these fields (tag -> encoded value), in tag order."""
        self.uvarint(len(fields))
        for tag in sorted(fields):
            self.uvarint(tag).uvarint(len(fields[tag])).raw(fields[tag])
        return self

    def raw(self, data: bytes) -> "Writer":
        self.out += data
        return self

    def bytes(self) -> bytes:
        return bytes(self.out)


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def _take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise SchemaError(f"{n} bytes wanted at {self.pos}, {len(self.data) - self.pos} left")
        view = self.data[self.pos:self.pos + n]
        self.pos += n
        return view

    def int8(self) -> int:
        return _I8.unpack(self._take(1))[0]

    def int16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def int32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def int64(self) -> int:
        return _I64.unpack(self._take(8))[0]

    def uvarint(self) -> int:
        try:
            value, self.pos = read_unsigned_varint(self.data, self.pos)
        except CorruptRecordError as exc:
            raise SchemaError(f"unsigned varint at {self.pos}: {Exception.__str__(exc)}") from None
        return value

    def _text(self, n: int) -> str:
        try:
            return bytes(self._take(n)).decode()
        except UnicodeDecodeError as exc:
            raise SchemaError(f"string is not UTF-8: {exc}") from None

    def string(self) -> str:
        n = self.int16()
        if n < 0:
            raise SchemaError("null where a string is required")
        return self._text(n)

    def compact_string(self) -> Optional[str]:
        n = self.uvarint()
        return None if n == 0 else self._text(n - 1)

    def compact_array(self, read: Callable[["Reader"], T]) -> list[T]:
        n = self.uvarint()
        if n == 0:
            raise SchemaError("null where an array is required")
        if n - 1 > len(self.data) - self.pos:
            raise SchemaError(f"array of {n - 1} items in {len(self.data) - self.pos} bytes")
        return [read(self) for _ in range(n - 1)]

    def uuid(self) -> bytes:
        return bytes(self._take(16))

    def skip_tagged_fields(self) -> None:
        self.tagged_fields()

    def tagged_fields(self) -> dict[int, bytes]:
        """The section's fields, tag -> the value's bytes (for a Reader of their own)."""
        fields: dict[int, bytes] = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            fields[tag] = bytes(self._take(self.uvarint()))
        return fields
