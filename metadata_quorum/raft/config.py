"""Quorum configuration: Kafka's `controller.quorum.*` names and defaults."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Mapping

# Kafka property name -> field name. Only settings Kafka has are listed here.
KAFKA_PROPERTY_NAMES: dict[str, str] = {
    "controller.quorum.election.timeout.ms": "election_timeout_ms",
    "controller.quorum.fetch.timeout.ms": "fetch_timeout_ms",
    "controller.quorum.election.backoff.max.ms": "election_backoff_max_ms",
    "controller.quorum.request.timeout.ms": "request_timeout_ms",
    "controller.quorum.append.linger.ms": "append_linger_ms",
    "controller.quorum.retry.backoff.ms": "retry_backoff_ms",
}


@dataclass(frozen=True)
class QuorumConfig:
    # Kafka settings (see KAFKA_PROPERTY_NAMES).
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000
    append_linger_ms: int = 25
    retry_backoff_ms: int = 20
    # Internal knobs that Kafka hard-codes or takes from the request; not
    # operator settings. A follower's Fetch asks the leader to hold it this
    # long when there is nothing new (long poll).
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = 1 << 20
    fetch_snapshot_max_bytes: int = 1 << 20
    # The leader writes its accumulated appends at once when this many wait.
    append_max_batch_records: int = 1000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"{f.name} must be a non-negative int, got {value!r}")
        if self.election_timeout_ms == 0 or self.fetch_timeout_ms == 0:
            raise ValueError("election and fetch timeouts must be positive")
        if self.fetch_max_bytes == 0 or self.fetch_snapshot_max_bytes == 0:
            raise ValueError("fetch sizes must be positive")
        if self.append_max_batch_records == 0:
            raise ValueError("append_max_batch_records must be positive")

    @property
    def fetch_wait_ms(self) -> int:
        """How long a follower asks the leader to hold a Fetch with nothing new.

        At most a quarter of the fetch timeout, so that a held fetch, its
        retry and the answer to the retry all fit before the follower gives
        up on the leader.
        """
        return max(1, min(self.fetch_max_wait_ms, self.fetch_timeout_ms // 4))

    @property
    def fetch_retry_ms(self) -> int:
        """A follower re-sends a Fetch that got no answer after this long.

        Twice the long-poll wait: a held fetch is answered before it is
        superseded (the leader keeps only the newest fetch of a replica, so a
        retry that came before the hold ended would starve the follower of
        answers). Shorter than the fetch timeout, so one lost message does
        not start an election.
        """
        return max(2 * self.fetch_wait_ms, min(self.request_timeout_ms, self.fetch_timeout_ms // 2))

    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> "QuorumConfig":
        """Build from Kafka-style properties; unknown `controller.quorum.*` keys are errors."""
        kwargs: dict[str, int] = {}
        for key, value in props.items():
            if key in KAFKA_PROPERTY_NAMES:
                kwargs[KAFKA_PROPERTY_NAMES[key]] = int(value)  # type: ignore[arg-type]
            elif key.startswith("controller.quorum.") and key not in (
                "controller.quorum.voters",
                "controller.quorum.bootstrap.servers",
            ):
                raise ValueError(f"unknown quorum setting {key}")
        return cls(**kwargs)
