"""The gRPC-Python streaming-bytes ceiling: the most any broker written with
gRPC-Python could move on this machine.

The server (`python -m bench.suite.grpc_ceiling PORT`) is a grpc.aio server
configured as kraftlog's (same message limits), with two raw-bytes methods
and no protobuf: Upload (client streams messages, server counts them) and
Download (server streams `count` messages of `size` bytes). A job drives one
direction from its own process.
"""
from __future__ import annotations

import asyncio
import struct
import sys
from dataclasses import dataclass
from typing import Any, AsyncIterator

import grpc

from client.channels import open_channel
from metadata_quorum.transport import SERVER_OPTIONS

UPLOAD = "/kraftlog.bench.Ceiling/Upload"
DOWNLOAD = "/kraftlog.bench.Ceiling/Download"
SIZE_AND_COUNT = struct.Struct(">QQ")


async def _upload(requests: AsyncIterator[bytes], context: Any) -> bytes:
    received = 0
    async for message in requests:
        received += len(message)
    return struct.pack(">Q", received)


async def _download(request: bytes, context: Any) -> AsyncIterator[bytes]:
    size, count = SIZE_AND_COUNT.unpack(request)
    payload = bytes(size)
    for _ in range(count):
        yield payload


async def serve(port: int) -> None:
    # No (de)serializers: handlers see and return the raw bytes.
    handler = grpc.method_handlers_generic_handler("kraftlog.bench.Ceiling", {
        "Upload": grpc.stream_unary_rpc_method_handler(_upload),
        "Download": grpc.unary_stream_rpc_method_handler(_download),
    })
    server = grpc.aio.server(options=SERVER_OPTIONS)
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


@dataclass
class StreamJob:
    """Move `total_bytes` in `message_bytes` messages, one direction."""
    address: str
    direction: str  # "up" | "down"
    message_bytes: int
    total_bytes: int

    async def prepare(self) -> None:
        self._channel = open_channel(self.address)
        grpc.channel_ready_future(self._channel).result(timeout=30)

    async def run(self) -> dict[str, Any]:
        count = max(1, self.total_bytes // self.message_bytes)
        if self.direction == "up":
            payload = bytes(self.message_bytes)
            answer = self._channel.stream_unary(UPLOAD)((payload for _ in range(count)), timeout=600)
            moved = struct.unpack(">Q", answer)[0]
        else:
            moved = 0
            for message in self._channel.unary_stream(DOWNLOAD)(SIZE_AND_COUNT.pack(self.message_bytes, count),
                                                                 timeout=600):
                moved += len(message)
        return {"records": count, "bytes": moved}

    async def close(self) -> None:
        if hasattr(self, "_channel"):
            self._channel.close()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1])))
