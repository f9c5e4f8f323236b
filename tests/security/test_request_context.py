"""security/request_context.py: the session of one call, and peer addresses."""
from __future__ import annotations

import asyncio

from security.principal import KafkaPrincipal
from security.request_context import (RequestSession, current_session, peer_host, reset_session,
                                      set_session)


def test_peer_host_reads_grpc_peer_strings():
    assert peer_host("ipv4:127.0.0.1:5000") == "127.0.0.1"
    assert peer_host("ipv6:[::1]:5000") == "::1"
    assert peer_host("ipv6:[fe80::1%eth0]:5000") == "fe80::1"
    assert peer_host("unix:/tmp/sock") == "unix:/tmp/sock"
    assert peer_host(None) == ""


def test_each_task_sees_only_its_own_session():
    async def serve(name: str, seen: dict) -> None:
        token = set_session(RequestSession(KafkaPrincipal.user(name), "127.0.0.1", "PLAINTEXT"))
        try:
            await asyncio.sleep(0.01)  # the other calls run meanwhile
            seen[name] = current_session().principal.name
        finally:
            reset_session(token)

    async def main() -> dict:
        seen: dict = {}
        await asyncio.gather(*(serve(n, seen) for n in ("alice", "bob", "carol")))
        return seen

    assert asyncio.run(main()) == {"alice": "alice", "bob": "bob", "carol": "carol"}
    assert current_session() is None
