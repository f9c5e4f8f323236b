"""The control records the metadata quorum writes: LEADER_CHANGE and
KRAFT_VOTERS (KIP-853's VotersRecord) in the log, SNAPSHOT_HEADER and
SNAPSHOT_FOOTER around a snapshot's data (and KRAFT_VOTERS after the header
when the snapshot carries a voter set). Their key
codec is Kafka's, shared with the transaction markers
(kafka_protocol/control_records.py).
"""

from __future__ import annotations

from kafka_protocol.control_records import ControlType, control_key, control_type

LEADER_CHANGE = int(ControlType.LEADER_CHANGE)
SNAPSHOT_HEADER = int(ControlType.SNAPSHOT_HEADER)
SNAPSHOT_FOOTER = int(ControlType.SNAPSHOT_FOOTER)
KRAFT_VOTERS = int(ControlType.KRAFT_VOTERS)

__all__ = ["KRAFT_VOTERS", "LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER", "control_key", "control_type"]
