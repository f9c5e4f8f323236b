"""PeerTransport's channels: one per voter address, and the old one closed when a voter moves."""
from __future__ import annotations

import asyncio

from metadata_quorum.transport import PeerTransport


def test_a_moved_voter_gets_a_new_channel_and_its_old_one_is_closed():
    async def run() -> None:
        # Nothing listens at these ports: channels connect lazily, nothing is sent here.
        transport = PeerTransport({}, request_timeout_ms=50, bootstrap=())
        transport._learned[7] = ("127.0.0.1", 1)
        first = transport._stub(7)
        assert transport._stub(7) is first  # the same address: the same channel
        [(_, old, _)] = transport._stubs.values()
        transport._learned[7] = ("127.0.0.1", 2)  # the voter moved (UpdateRaftVoter)
        moved = transport._stub(7)
        assert moved is not first and transport._retired == {old}
        for _ in range(100):  # closed after its grace (the request timeout)
            if not transport._retired:
                break
            await asyncio.sleep(0.02)
        assert not transport._retired and old._channel.closed()
        [(_, current, _)] = transport._stubs.values()
        assert not current._channel.closed()
        await transport.close()
        assert current._channel.closed()

    asyncio.run(run())
