"""A log directory taken offline by its first I/O error (Kafka's KIP-112).

Every Log of a directory shares one LogDirFailure. The first OSError or
KafkaStorageError out of a log operation (a write, an fsync, a truncation,
a read) marks the whole directory offline: from then on every operation on
every log in it raises KafkaStorageError (KAFKA_STORAGE_ERROR to clients)
without touching the disk, so nothing is written, read, served or
acknowledged from a directory whose state is unknown. In particular a
failed fsync is never retried: after a writeback error the kernel may have
dropped the dirty pages and a second fsync would report success over lost
data (the PostgreSQL "fsyncgate" lesson). The listeners (the broker) hear
of it once and decide what the node does next.
"""
from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Callable, TypeVar

from kafka_protocol.errors import KafkaStorageError

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable)


class LogDirFailure:
    def __init__(self, directory: Path | str) -> None:
        self.directory = str(directory)
        self.reason: str | None = None
        self._listeners: list[Callable[[str], None]] = []

    @property
    def offline(self) -> bool:
        return self.reason is not None

    def add_listener(self, listener: Callable[[str], None]) -> None:
        """`listener(reason)` is called once, when the directory goes offline."""
        self._listeners.append(listener)

    def check(self) -> None:
        if self.reason is not None:
            raise KafkaStorageError(self.reason)

    def fail(self, exc: BaseException) -> KafkaStorageError:
        """Take the directory offline (the first error only); the error to raise."""
        if self.reason is None:
            cause = getattr(exc, "strerror", None) or str(exc)
            self.reason = f"log directory {self.directory} is offline after an I/O error: {cause}"
            log.error("%s", self.reason)
            for listener in self._listeners:
                listener(self.reason)
        return KafkaStorageError(self.reason)


def guarded(method: F) -> F:
    """A Log method that touches the disk: refused once the directory is
    offline, and its I/O error takes the directory offline."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        failure: LogDirFailure = self.dir_failure
        if failure.reason is not None:
            raise KafkaStorageError(failure.reason)
        try:
            return method(self, *args, **kwargs)
        except (OSError, KafkaStorageError) as exc:
            raise failure.fail(exc) from exc
    return run  # type: ignore[return-value]
