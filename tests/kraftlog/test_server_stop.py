"""kraftlog_server.server.stop_node: a quorum node whose loop ignores a cancellation
still stops, and its log is still closed."""
from __future__ import annotations

import asyncio

from kraftlog_server import server


class StubbornNode:
    """node.stop()'s shape: cancel the loop, await it, then close the log. The
    loop ignores the first cancellation, as one can under asyncio.wait_for."""

    node_id = 9

    def __init__(self) -> None:
        self.closed = False
        self.ignored = 0
        self.loop = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if self.ignored:
                    raise
                self.ignored += 1

    async def stop(self) -> None:
        self.loop.cancel()
        try:
            await self.loop
        except asyncio.CancelledError:
            pass
        self.closed = True


def test_a_node_whose_loop_ignores_a_cancellation_still_stops(monkeypatch):
    monkeypatch.setattr(server, "NODE_STOP_TIMEOUT_S", 0.05)

    async def scenario() -> StubbornNode:
        node = StubbornNode()
        await asyncio.sleep(0)
        async with asyncio.timeout(5):
            await server.stop_node(node)  # type: ignore[arg-type]
        return node

    node = asyncio.run(scenario())
    assert node.ignored == 1 and node.loop.cancelled() and node.closed
