"""A walk over a request body by kio's schema, for two things kio's reader
does not do.

Array lengths (`check_array_lengths`, before every request is read): kio's
native readers make room for the entries an array says it has before they
read one, and a failed allocation aborts the process - a frame saying 2**32
entries would end the broker. The walk refuses any array that says more
entries than bytes are left; fixed-size fields and strings are measured by
their size or length prefix, without kio's readers copying them.

KIP-482: the receiver of a flexible message skips the tagged fields it
does not know. That is how a newer client adds a field an older broker
ignores - and kio 0.6.5's reader refuses such a field instead ("Unknown
tagged field tag"), which would close the connection of a client doing
nothing wrong.

`drop_unknown_tags(kind, frame, offset)` rewrites the message body at
`offset` with every tagged field `kind`'s schema does not declare left out,
at every level of nesting, so that kio's reader takes the rest. The codec
calls it only after kio has refused a flexible request, so a request
without unknown tags never pays for the walk. Fields are measured by kio's
own field readers and nested entities walked through kio's schema classes:
nothing here knows a message by hand. (kio's `serial._introspect` and
`serial._parse` are internal modules; kio is pinned, pyproject.toml.)
"""
from __future__ import annotations

import dataclasses
import struct
from functools import lru_cache
from typing import Any, Callable, NamedTuple, Optional

from kio.serial._introspect import (EntityField, EntityTupleField, PrimitiveTupleField, classify_field,
                                    get_field_tag, is_optional)
from kio.serial._parse import get_field_reader

from ..errors import CorruptRecordError
from ..varint import read_unsigned_varint, unsigned_varint_bytes
from .errors import WireError
from .framing import BytesLike

_INT8 = struct.Struct(">b")
_INT32 = struct.Struct(">i")
_NULL_ENTITY = -1  # KIP-893: a nullable struct is an int8 marker, -1 for null, then the struct


class _Field(NamedTuple):
    read: Optional[Callable[[BytesLike, int], tuple[Any, int]]]  # kio's reader, for a primitive or their array
    entity: Optional["_Plan"]  # for an entity or an array of them
    array: bool
    nullable: bool  # a nullable entity (not an array: arrays carry their null in the length)
    flexible: bool  # compact array lengths
    # How to measure an untagged primitive without kio's reader (which would
    # copy a string or a batch's bytes only to be told its size): its fixed
    # size, or the struct of its length prefix (None: compact, a varint).
    fixed: int = 0
    prefixed: bool = False
    prefix: Optional[struct.Struct] = None


class _Plan(NamedTuple):
    fields: tuple[_Field, ...]  # the untagged fields, in order
    tagged: dict[int, _Field]  # the tags the schema declares
    flexible: bool


def drop_unknown_tags(kind: type, frame: BytesLike, offset: int) -> bytes:
    """The bytes of the `kind` message at `offset` in `frame`, its unknown
    tagged fields left out (the same bytes when it has none; what follows
    the message, if anything, is kept). WireError when the bytes do not
    read as a `kind` message."""
    out = bytearray()
    try:
        end = _entity(_plan(kind), frame, offset, len(frame), out)
    except WireError:
        raise
    except Exception as exc:  # noqa: BLE001 - kio's field readers fail in many ways on hostile bytes
        raise WireError(f"malformed {kind.__name__}: {exc}") from None
    out += frame[end:]
    return bytes(out)


@lru_cache(maxsize=None)
def _plan(kind: type) -> _Plan:
    fields, tagged = [], {}
    for field in dataclasses.fields(kind):
        tag = get_field_tag(field)
        walked = _field_plan(kind, field, tag is not None)
        if tag is None:
            fields.append(walked)
        else:
            tagged[int(tag)] = walked
    return _Plan(tuple(fields), tagged, kind.__flexible__)


def _field_plan(kind: type, field: dataclasses.Field, is_tag: bool) -> _Field:
    shape = classify_field(field)
    if isinstance(shape, (EntityField, EntityTupleField)):
        # a tagged entity is never nullable: its absence is the tag's
        return _Field(None, _plan(shape.type_), isinstance(shape, EntityTupleField),
                      isinstance(shape, EntityField) and not is_tag and is_optional(field), kind.__flexible__)
    array = isinstance(shape, PrimitiveTupleField)
    read = get_field_reader(kind, field, False, is_tag)
    kafka_type = field.metadata.get("kafka_type")
    if array or is_tag:
        return _Field(read, None, array, False, kind.__flexible__)
    if kafka_type in _FIXED_SIZES:
        return _Field(read, None, False, False, kind.__flexible__, fixed=_FIXED_SIZES[kafka_type])
    if kafka_type in _LEGACY_PREFIXES:
        return _Field(read, None, False, False, kind.__flexible__, prefixed=True,
                      prefix=None if kind.__flexible__ else _LEGACY_PREFIXES[kafka_type])
    return _Field(read, None, False, False, kind.__flexible__)


# Kafka's primitive types (kio's kafka_type names) of a fixed size, and the
# length prefixes of the variable ones outside flexible versions.
_FIXED_SIZES = {"bool": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2,
                "uint32": 4, "uint64": 8, "float64": 8, "uuid": 16, "error_code": 2,
                "timedelta_i32": 4, "timedelta_i64": 8, "datetime_i64": 8}
_INT16 = struct.Struct(">h")
_LEGACY_PREFIXES = {"string": _INT16, "bytes": _INT32, "records": _INT32}


def check_array_lengths(kind: type, frame: BytesLike, offset: int) -> None:
    """WireError when an array of the `kind` message at `offset` says it has
    more entries than bytes are left in `frame` (or the message does not
    read). kio's native array readers make room for the length an array
    says before they read an entry, and a failed allocation aborts the
    process: a request saying 2**32 entries would end the broker. Every
    entry takes a byte at least, so an array that passes is no larger than
    its frame."""
    try:
        _entity(_plan(kind), frame, offset, len(frame), None)
    except WireError:
        raise
    except Exception as exc:  # noqa: BLE001 - kio's field readers fail in many ways on hostile bytes
        raise WireError(f"malformed {kind.__name__}: {exc}") from None


def _entity(plan: _Plan, buf: BytesLike, pos: int, end: int, out: Optional[bytearray]) -> int:
    """Walk one entity; copy it to `out` without its unknown tags (no copy when None)."""
    for field in plan.fields:
        pos = _field(field, buf, pos, end, out)
    if not plan.flexible:
        return pos
    count, pos = _uvarint(buf, pos, end)
    kept, known = bytearray(), 0
    for _ in range(count):
        tag, pos = _uvarint(buf, pos, end)
        size, pos = _uvarint(buf, pos, end)
        if size > end - pos:
            raise WireError(f"tagged field {tag} of {size} bytes runs past its message")
        field = plan.tagged.get(tag)
        if field is not None:
            # a known tag keeps its place; what it holds may have unknown tags of its own
            inner = None if out is None else bytearray()
            if _field(field, buf, pos, pos + size, inner) != pos + size:
                raise WireError(f"tagged field {tag} is not the {size} bytes it says")
            if inner is not None:
                kept += unsigned_varint_bytes(tag) + unsigned_varint_bytes(len(inner)) + inner
            known += 1
        pos += size
    if out is not None:
        out += unsigned_varint_bytes(known)
        out += kept
    return pos


def _field(field: _Field, buf: BytesLike, pos: int, end: int, out: Optional[bytearray]) -> int:
    if field.fixed or field.prefixed:
        size = field.fixed or _prefixed_size(field.prefix, buf, pos, end)
        if size > end - pos:
            raise WireError("a field runs past its message")
        if out is not None:
            out += buf[pos:pos + size]
        return pos + size
    if field.entity is None:
        if field.array:
            count, first = _array_length(field, buf, pos, end)
            if count > end - first:  # before kio's reader makes room for them
                raise WireError(f"an array of {count} entries in {end - first} bytes")
        _, size = field.read(buf, pos)
        if size > end - pos:
            raise WireError("a field runs past its message")
        if out is not None:
            out += buf[pos:pos + size]
        return pos + size
    if field.array:
        count, first = _array_length(field, buf, pos, end)
        if out is not None:
            out += buf[pos:first]
        pos = first
        if count > end - pos:  # every entity takes a byte at least
            raise WireError(f"an array of {count} entries in {end - pos} bytes")
        for _ in range(max(count, 0)):
            pos = _entity(field.entity, buf, pos, end, out)
        return pos
    if field.nullable:
        if pos >= end:
            raise WireError("a nullable struct ends before its marker")
        (marker,) = _INT8.unpack_from(buf, pos)
        if out is not None:
            out += buf[pos:pos + 1]
        pos += 1
        if marker == _NULL_ENTITY:
            return pos
    return _entity(field.entity, buf, pos, end, out)


def _prefixed_size(prefix: Optional[struct.Struct], buf: BytesLike, pos: int, end: int) -> int:
    """The size of a string or bytes field at `pos`, its length prefix included."""
    if prefix is None:
        length, start = _uvarint(buf, pos, end)
        return start - pos + max(length - 1, 0)  # compact: length + 1, 0 for null
    if pos + prefix.size > end:
        raise WireError("a field ends before its length")
    (length,) = prefix.unpack_from(buf, pos)
    return prefix.size + max(length, 0)  # -1 for null


def _array_length(field: _Field, buf: BytesLike, pos: int, end: int) -> tuple[int, int]:
    """An array's entry count (-1 for null) and where its first entry starts."""
    if field.flexible:
        length, pos = _uvarint(buf, pos, end)
        return length - 1, pos  # 0 is null
    if pos + _INT32.size > end:
        raise WireError("an array ends before its length")
    (count,) = _INT32.unpack_from(buf, pos)
    return count, pos + _INT32.size


def _uvarint(buf: BytesLike, pos: int, end: int) -> tuple[int, int]:
    try:
        return read_unsigned_varint(buf, pos, end)
    except CorruptRecordError:
        raise WireError("an unsigned varint runs past its message") from None
