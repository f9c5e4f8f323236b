"""How long each partition could not take writes, read from a run's history.

The producers send to every partition all the time (chaos/workload.py), so
a partition's longest produce unavailability is the longest wait for an
acknowledgement: the longest interval between two successive `ok` sends of
that partition, the first measured from its first send. Sends that failed
(`info`) do not end an interval: the partition still took nothing. Pure:
history lines in, seconds out."""
from __future__ import annotations

from typing import Any, Iterable

from .history import INVOKE, NEMESIS, OK

SEND = "send"


def produce_unavailability(history: Iterable[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per partition (the send key): {"longest_s", "from_s", "to_s"}, times since the run began."""
    sends: dict[int, str] = {}  # process -> partition of its open send
    since: dict[str, int] = {}  # partition -> its first send, then its last acknowledgement (ns)
    longest: dict[str, tuple[int, int]] = {}
    for line in history:
        if line["process"] == NEMESIS or line.get("f") != SEND:
            continue
        if line["type"] == INVOKE:
            sends[line["process"]] = line["key"]
            since.setdefault(line["key"], line["time"])
            continue
        partition = sends.pop(line["process"], None)
        if partition is None or line["type"] != OK:
            continue
        start, now = since[partition], line["time"]
        best = longest.get(partition)
        if best is None or now - start > best[1] - best[0]:
            longest[partition] = (start, now)
        since[partition] = now
    return {partition: {"longest_s": round((end - start) / 1e9, 3), "from_s": round(start / 1e9, 3),
                        "to_s": round(end / 1e9, 3)}
            for partition, (start, end) in sorted(longest.items())}
