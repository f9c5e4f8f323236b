"""What a controller decision produces: records to append, and the answer to send once they commit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from google.protobuf.message import Message

from kraftlog_api import metadata_pb2 as mpb


@dataclass
class ControllerResult:
    """Records to append through Raft (one entry each, in order, as one batch), then the response.

    The shell sends `response` once the records have committed. A result
    without records still waits for everything appended before it to commit,
    because the answer may rest on it. `response` is None for the
    controller's own work (`Controller.tick`).
    """

    records: list[mpb.MetadataRecord] = field(default_factory=list)
    response: Optional[Message] = None
