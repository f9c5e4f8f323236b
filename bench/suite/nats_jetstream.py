"""NATS JetStream as a peer: Debian's nats-server with -js and file storage,
one server with an R1 stream and a 3-server cluster with an R3 stream.
nats-py publishes with async acks (publish_async, up to 4,000 pending, its
default); a record counts once its ack arrived."""
from __future__ import annotations

import asyncio
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Optional

from devcluster.local_processes import free_ports

from .processes import PeerProcesses, missing as missing_program

MAX_PENDING = 4000
STREAM_READY_TIMEOUT_S = 60.0


def missing() -> Optional[str]:
    return missing_program("nats-server", {"nats": "nats-py"})


def version() -> str:
    return subprocess.run(["nats-server", "--version"], capture_output=True, text=True).stdout.strip()


def start(processes: PeerProcesses, servers: int) -> list[str]:
    """`servers` nats-servers with JetStream (a cluster when more than one); their client URLs."""
    ports = free_ports(2 * servers)
    client_ports, route_ports = ports[:servers], ports[servers:]
    name = f"nats-{servers}"
    started = []
    for i in range(servers):
        directory = processes.directory(f"{name}/n{i + 1}")
        lines = [f'server_name: "{name}-n{i + 1}"', f'listen: "127.0.0.1:{client_ports[i]}"',
                 f'jetstream {{ store_dir: "{directory / "js"}" }}']
        if servers > 1:
            routes = ", ".join(f'"nats-route://127.0.0.1:{p}"' for j, p in enumerate(route_ports) if j != i)
            lines.append(f'cluster {{ name: "{name}", listen: "127.0.0.1:{route_ports[i]}", routes: [{routes}] }}')
        config = directory / "nats.conf"
        config.write_text("\n".join(lines) + "\n")
        started.append(processes.start(f"{name}-n{i + 1}", ["nats-server", "-c", str(config)]))
    for server, port in zip(started, client_ports):
        processes.wait_listening(server, port)
    return [f"nats://127.0.0.1:{p}" for p in client_ports]


async def _create_stream(urls: list[str], stream: str, replicas: int) -> None:
    import nats
    from nats.js.api import StorageType
    nc = await nats.connect(servers=urls)
    try:
        js = nc.jetstream(timeout=10)
        deadline = time.monotonic() + STREAM_READY_TIMEOUT_S
        while True:  # a new cluster answers once it elected its meta leader
            try:
                try:
                    await js.delete_stream(stream)
                except Exception:  # noqa: BLE001 - not there yet
                    pass
                await js.add_stream(name=stream, subjects=[stream.lower()], storage=StorageType.FILE,
                                    num_replicas=replicas)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)
    finally:
        await nc.close()


def create_stream(urls: list[str], stream: str, replicas: int) -> None:
    """(Re)create an empty file-storage stream with `replicas` replicas, subject = the name in lower case."""
    asyncio.run(_create_stream(urls, stream, replicas))


@dataclass
class PublishJob:
    urls: list[str]
    subject: str
    records: int
    value_bytes: int
    seconds: float

    async def prepare(self) -> None:
        import nats
        self._nc = await nats.connect(servers=self.urls)
        self._js = self._nc.jetstream(timeout=30, publish_async_max_pending=MAX_PENDING)
        await (await self._js.publish_async(self.subject, b"warm-up"))

    async def run(self) -> dict[str, Any]:
        value = bytes(self.value_bytes)
        failed = 0

        def settled(future: asyncio.Future) -> None:
            nonlocal failed
            if future.cancelled() or future.exception() is not None:
                failed += 1

        deadline = time.monotonic() + self.seconds
        sent = 0
        while sent < self.records and time.monotonic() < deadline:
            for _ in range(min(1000, self.records - sent)):
                (await self._js.publish_async(self.subject, value)).add_done_callback(settled)
            sent += min(1000, self.records - sent)
        await asyncio.wait_for(self._js.publish_async_completed(), 120)
        return {"records": sent - failed, "failed": failed}

    async def close(self) -> None:
        if hasattr(self, "_nc"):
            await self._nc.close()
