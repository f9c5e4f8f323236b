"""Kafka's control records, as far as the metadata quorum writes them.

A control record's key is `version int16 (0), type int16`; its batch has the
control attribute bit set. Types used here: LEADER_CHANGE (2) in the log,
SNAPSHOT_HEADER (3) and SNAPSHOT_FOOTER (4) around a snapshot's data.
"""

from __future__ import annotations

import struct
from typing import Optional

LEADER_CHANGE = 2
SNAPSHOT_HEADER = 3
SNAPSHOT_FOOTER = 4

_KEY = struct.Struct(">hh")
_KEY_VERSION = 0


def control_key(control_type: int) -> bytes:
    return _KEY.pack(_KEY_VERSION, control_type)


def control_type(key: Optional[bytes]) -> Optional[int]:
    """The type a control record key names; None if it is not a version-0 control key."""
    if key is None or len(key) != _KEY.size:
        return None
    version, kind = _KEY.unpack(key)
    return kind if version == _KEY_VERSION else None
