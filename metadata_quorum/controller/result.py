"""What a controller decision produces: records to append, and the answer to send once they commit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from google.protobuf.message import Message

from kraftlog_api import metadata_pb2 as mpb

from .errors import ControllerError, Error

# Kafka's QuorumController.MAX_RECORDS_PER_USER_OP: the most records one
# admin request may write. A request over it is refused whole, before any
# record is appended. Without it, 100,000 partitions became one append that
# held the leader's event loop past controller.quorum.fetch.timeout.ms: the
# followers elected one of themselves, which committed the prefix of the
# records they had fetched (40,646 partitions), and the rest was lost.
MAX_RECORDS_PER_USER_OP = 10_000


class TooManyRecords(ControllerError):
    """A request over MAX_RECORDS_PER_USER_OP: refused as a whole, not item by item."""


def too_many_records(count: int) -> TooManyRecords:
    """The refusal of a request that would write at least `count` (> MAX_RECORDS_PER_USER_OP) records
    (Kafka's PolicyViolationException for an oversized operation)."""
    return TooManyRecords(
        Error.POLICY_VIOLATION,
        f"Unable to perform excessively large batch operation: the request would write at least {count} "
        f"metadata records, at most {MAX_RECORDS_PER_USER_OP} are allowed in one request")


@dataclass
class ControllerResult:
    """Records to append through Raft (in order, as one entry: they commit together), then the response.

    The shell sends `response` once the records have committed. A result
    without records still waits for everything appended before it to commit,
    because the answer may rest on it. `response` is None for the
    controller's own work (`Controller.tick`).
    """

    records: list[mpb.MetadataRecord] = field(default_factory=list)
    response: Optional[Message] = None
