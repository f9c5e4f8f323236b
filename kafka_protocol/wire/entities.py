"""Building a kio message of one version from plain values.

A Kafka API has many versions, each its own kio class with the fields that
version carries. The adapters describe an answer once, as nested mappings
of field names to plain values (ints for error codes and milliseconds),
and `build` makes the message of the version the client asked for: fields
the version lacks are left out (as Kafka's serializer drops them), fields
the caller does not give keep their defaults, and error codes, durations
and timestamps become the types kio's writers expect.
"""
from __future__ import annotations

import dataclasses
import datetime
from functools import lru_cache
from types import NoneType, UnionType
from typing import Any, Mapping, Optional, get_args, get_origin

from kio.schema.errors import ErrorCode

_UTC = datetime.timezone.utc
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=_UTC)
_MILLISECOND = datetime.timedelta(milliseconds=1)


def build(kind: type, values: Mapping[str, Any]) -> Any:
    """An instance of the kio entity class `kind` from `values`; a list of
    mappings for a field of nested entities, a mapping for one nested entity."""
    given = {}
    for name, (kafka_type, nested, nullable) in _fields(kind).items():
        if name not in values:
            continue  # the default, or the constructor names the missing field
        value = values[name]
        if nested is not None and value is not None:
            value = (tuple(build(nested, item) for item in value) if isinstance(value, (list, tuple))
                     else build(nested, value))
        elif value is not None:
            value = _convert(kafka_type, value, nullable)
        given[name] = value
    return kind(**given)


def millis(value: Any) -> int:
    """A duration or timestamp field of a decoded request, in milliseconds
    (exactly: a float of seconds loses milliseconds past 2**53 of them)."""
    if isinstance(value, datetime.timedelta):
        return value // _MILLISECOND
    if isinstance(value, datetime.datetime):
        return (value - _EPOCH) // _MILLISECOND
    return int(value)


def _convert(kafka_type: Optional[str], value: Any, nullable: bool) -> Any:
    if kafka_type == "error_code":
        try:
            return ErrorCode(value)
        except ValueError:  # a code newer than kio's table: the client could not name it either
            return ErrorCode.unknown_server_error
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=value)
    if kafka_type == "datetime_i64":
        # Kafka's -1 (no timestamp) is kio's None for the nullable ones; a
        # field that cannot be null gets the instant itself (kio writes -1).
        if value < 0 and nullable:
            return None
        return datetime.datetime.fromtimestamp(value / 1000, tz=_UTC)
    return value


@lru_cache(maxsize=None)
def _fields(kind: type) -> dict[str, tuple[Optional[str], Optional[type], bool]]:
    """name -> (kafka_type, the nested entity class or None, whether it may be None) of `kind`'s fields."""
    return {f.name: (f.metadata.get("kafka_type"), _entity_type(f.type),
                     get_origin(f.type) is UnionType and NoneType in get_args(f.type))
            for f in dataclasses.fields(kind)}


def _entity_type(annotation: Any) -> Optional[type]:
    """The entity class a field holds (alone, optional or in a tuple), or None for a primitive."""
    if get_origin(annotation) is UnionType:
        annotation = next(a for a in get_args(annotation) if a is not NoneType)
    if get_origin(annotation) is tuple:
        annotation = get_args(annotation)[0]
    return annotation if isinstance(annotation, type) and dataclasses.is_dataclass(annotation) else None
