"""KIP-482: the receiver of a flexible message skips the tagged fields it
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
    return _Field(get_field_reader(kind, field, False, is_tag), None, isinstance(shape, PrimitiveTupleField),
                  False, kind.__flexible__)


def _entity(plan: _Plan, buf: BytesLike, pos: int, end: int, out: bytearray) -> int:
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
            inner = bytearray()
            if _field(field, buf, pos, pos + size, inner) != pos + size:
                raise WireError(f"tagged field {tag} is not the {size} bytes it says")
            kept += unsigned_varint_bytes(tag) + unsigned_varint_bytes(len(inner)) + inner
            known += 1
        pos += size
    out += unsigned_varint_bytes(known)
    out += kept
    return pos


def _field(field: _Field, buf: BytesLike, pos: int, end: int, out: bytearray) -> int:
    if field.entity is None:
        _, size = field.read(buf, pos)
        if size > end - pos:
            raise WireError("a field runs past its message")
        out += buf[pos:pos + size]
        return pos + size
    if field.array:
        start = pos
        if field.flexible:
            length, pos = _uvarint(buf, pos, end)
            count = length - 1  # 0 is null
        else:
            if pos + _INT32.size > end:
                raise WireError("an array ends before its length")
            (count,) = _INT32.unpack_from(buf, pos)
            pos += _INT32.size
        out += buf[start:pos]
        if count > end - pos:  # every entity takes a byte at least
            raise WireError(f"an array of {count} entries in {end - pos} bytes")
        for _ in range(max(count, 0)):
            pos = _entity(field.entity, buf, pos, end, out)
        return pos
    if field.nullable:
        if pos >= end:
            raise WireError("a nullable struct ends before its marker")
        (marker,) = _INT8.unpack_from(buf, pos)
        out += buf[pos:pos + 1]
        pos += 1
        if marker == _NULL_ENTITY:
            return pos
    return _entity(field.entity, buf, pos, end, out)


def _uvarint(buf: BytesLike, pos: int, end: int) -> tuple[int, int]:
    try:
        return read_unsigned_varint(buf, pos, end)
    except CorruptRecordError:
        raise WireError("an unsigned varint runs past its message") from None
