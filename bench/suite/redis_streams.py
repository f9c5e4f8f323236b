"""Redis Streams as a peer: Debian's redis-server with `appendonly yes`,
`appendfsync everysec` (its durable-ish default for a log), RDB off.
XADD pipelined from redis-py with hiredis (1,000 commands a round trip), one
stream per producer process; XREAD back 10,000 entries a call."""
from __future__ import annotations

import asyncio
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Optional

from devcluster.local_processes import free_ports

from .processes import PeerProcesses, missing as missing_program

PIPELINE = 1000
READ_COUNT = 10_000


def missing() -> Optional[str]:
    return missing_program("redis-server", {"redis": "redis", "hiredis": "hiredis"})


def version() -> str:
    return subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.strip()


def start(processes: PeerProcesses) -> int:
    """redis-server on a free port in its own dir; the port."""
    port = free_ports(1)[0]
    directory = processes.directory("redis")
    server = processes.start("redis-server", [
        "redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", str(directory),
        "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--daemonize", "no",
        "--protected-mode", "no", "--logfile", ""])
    processes.wait_listening(server, port)
    return port


def _connect(port: int) -> Any:
    import redis
    client = redis.Redis(host="127.0.0.1", port=port)
    client.ping()
    return client


def delete_streams(port: int, streams: list[str]) -> None:
    client = _connect(port)
    try:
        client.delete(*streams)
    finally:
        client.close()


@dataclass
class XaddJob:
    port: int
    stream: str
    records: int
    value_bytes: int
    seconds: float  # stop early (counting what was added) past this

    async def prepare(self) -> None:
        self._client = _connect(self.port)
        self._client.delete(self.stream)

    async def run(self) -> dict[str, Any]:
        value = bytes(self.value_bytes)
        pipe = self._client.pipeline(transaction=False)
        deadline = time.monotonic() + self.seconds
        added = 0
        while added < self.records and time.monotonic() < deadline:
            for _ in range(min(PIPELINE, self.records - added)):
                pipe.xadd(self.stream, {b"v": value})
            added += len(pipe.execute())
        return {"records": added}

    async def close(self) -> None:
        if hasattr(self, "_client"):
            await asyncio.to_thread(self._client.close)


@dataclass
class XreadJob:
    port: int
    stream: str
    records: int
    seconds: float

    async def prepare(self) -> None:
        self._client = _connect(self.port)

    async def run(self) -> dict[str, Any]:
        last, read = b"0-0", 0
        deadline = time.monotonic() + self.seconds
        while read < self.records and time.monotonic() < deadline:
            answer = self._client.xread({self.stream: last}, count=min(READ_COUNT, self.records - read))
            if not answer:
                break
            entries = answer[0][1]
            read += len(entries)
            last = entries[-1][0]
        return {"records": read}

    async def close(self) -> None:
        if hasattr(self, "_client"):
            self._client.close()
