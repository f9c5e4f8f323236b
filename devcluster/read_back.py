"""Reading a whole topic back through the client's Consumer, for a check
that every record arrived: the demo's and the tests'.

No group and no commits: every partition named is assigned from its first
offset, and polled until `max_messages` came or nothing new came for
`idle_timeout_s` (so a record that never arrives ends the read instead of
hanging it).
"""
from __future__ import annotations

import time
from typing import Any, Iterable, Mapping

from client.consumer import Consumer, ConsumerRecord, TopicPartition


def read_back(bootstrap: str, topic: str, partitions: Iterable[int], *, max_messages: int,
              idle_timeout_s: float, settings: Mapping[str, Any] = {}) -> list[ConsumerRecord]:
    """The records, in offset order per partition; the last poll may bring a
    few past `max_messages`, which are kept (a duplicate must show).
    `settings`: more consumer settings (security.protocol, ssl.*)."""
    got: list[ConsumerRecord] = []
    with Consumer({**settings, "bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        last_data = time.monotonic()
        while len(got) < max_messages and time.monotonic() - last_data < idle_timeout_s:
            records = consumer.poll(0.5)
            if records:
                got += records
                last_data = time.monotonic()
    return got
