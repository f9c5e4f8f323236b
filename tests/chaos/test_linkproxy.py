"""The link proxy: the release schedule (pure), and the real proxy on
loopback in front of an echo server - bytes pass in order, a delay holds
them at least that long, a stall holds them until cleared, a reset is a
TCP RST, and close() ends every connection."""
from __future__ import annotations

import random
import socket
import threading
import time

import pytest
from hypothesis import given, settings, strategies as st

from chaos.linkproxy import LinkProxy, Toxics, release_at


@settings(max_examples=50, deadline=None)
@given(arrivals=st.lists(st.floats(0, 100), min_size=1, max_size=50), latency=st.floats(0, 500),
       jitter=st.floats(0, 500), seed=st.integers(0, 2**32))
def test_release_keeps_the_order_and_delays_within_the_jitter(arrivals, latency, jitter, seed) -> None:
    toxics, rng = Toxics(latency, jitter), random.Random(seed)
    previous = 0.0
    for arrival in sorted(arrivals):
        at = release_at(arrival, previous, toxics, rng)
        assert at >= previous  # a stream is never reordered
        assert at >= arrival + max(0.0, latency - jitter) / 1000 - 1e-9
        assert at <= max(previous, arrival + (latency + jitter) / 1000) + 1e-9
        previous = at
    again, rng = 0.0, random.Random(seed)
    for arrival in sorted(arrivals):
        again = release_at(arrival, again, toxics, rng)
    assert again == previous  # the seed decides the jitter


def test_bad_toxics() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        Toxics(latency_ms=-1)
    with pytest.raises(ValueError, match=">= 0"):
        Toxics(jitter_ms=-5)
    assert Toxics(100, 0, True).describe() == {"latency_ms": 100, "stall": True}


@pytest.fixture
def echo():
    """An echo server on 127.0.0.1 (one thread per connection), closed at the end."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            try:
                while data := conn.recv(65536):
                    conn.sendall(data)
            except OSError:
                pass

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except socket.timeout:
                continue
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield server.getsockname()
    finally:
        stop.set()
        acceptor.join(5)
        server.close()


@pytest.fixture
def proxy():
    with LinkProxy(seed=1) as p:
        yield p


def exchange(port: int, payload: bytes, timeout: float = 5.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as c:
        c.sendall(payload)
        got = b""
        while len(got) < len(payload):
            chunk = c.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


def test_bytes_pass_in_order_through_a_jittery_link(echo, proxy) -> None:
    port = proxy.add_route("127.0.0.1", echo, upstream=Toxics(5, 5), downstream=Toxics(5, 5))
    payload = bytes(range(256)) * 4096  # 1 MiB, many chunks, each jittered
    assert exchange(port, payload) == payload
    assert proxy.accepted(port) == 1


def test_one_way_delay_holds_the_bytes_at_least_that_long(echo, proxy) -> None:
    # A lower bound only: the proxy sleeps before it forwards, so the echo
    # cannot come sooner; how much later it comes is the machine's business.
    port = proxy.add_route("127.0.0.1", echo, upstream=Toxics(latency_ms=300))
    started = time.monotonic()
    assert exchange(port, b"ping") == b"ping"
    assert time.monotonic() - started >= 0.3


def test_a_stall_holds_everything_until_cleared(echo, proxy) -> None:
    port = proxy.add_route("127.0.0.1", echo, downstream=Toxics(stall=True))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
        c.sendall(b"held")
        c.settimeout(0.5)
        with pytest.raises(socket.timeout):
            c.recv(10)  # the echo came back to the proxy, which holds it
        proxy.set_toxics(port)  # healed: what was held flows, in order
        c.settimeout(5)
        assert c.recv(10) == b"held"
        c.sendall(b"again")
        assert c.recv(10) == b"again"


def test_reset_closes_each_connection_with_a_rst(echo, proxy) -> None:
    port = proxy.add_route("127.0.0.1", echo, reset_after_ms=0)
    for _ in range(2):  # again on every new connection
        with pytest.raises(ConnectionResetError):  # at once, or on the first write or read
            with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
                c.sendall(b"x")
                assert c.recv(10) == b""  # an orderly close would come here instead: fail loudly
                raise AssertionError("no reset")
    proxy.set_toxics(port)
    assert exchange(port, b"after") == b"after"


def test_an_unreachable_target_is_refused_and_close_resets_live_connections(echo) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        closed_port = unused.getsockname()[1]  # nothing listens here
    proxy = LinkProxy()
    try:
        dead = proxy.add_route("127.0.0.1", ("127.0.0.1", closed_port))
        with pytest.raises(ConnectionResetError):  # at once, or on the first read
            with socket.create_connection(("127.0.0.1", dead), timeout=5) as c:
                c.settimeout(5)
                c.recv(10)
        live = proxy.add_route("127.0.0.1", echo)
        c = socket.create_connection(("127.0.0.1", live), timeout=5)
        c.sendall(b"up")
        assert c.recv(10) == b"up"
    finally:
        proxy.close()
    with c:
        c.settimeout(5)
        with pytest.raises(ConnectionResetError):
            c.recv(10)
    proxy.close()  # twice is fine
    with LinkProxy() as refusing, pytest.raises(ValueError, match=">= 0"):
        refusing.add_route("127.0.0.1", echo, reset_after_ms=-1)


def test_close_resets_a_connection_still_waiting_for_its_target() -> None:
    """A target that accepts nothing (a full backlog stands in for a slow
    one): close() must still reset the client, not leave it hanging."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(0)
        fillers = [socket.socket() for _ in range(8)]
        for f in fillers:  # fill the backlog, so that the proxy's connect hangs
            f.setblocking(False)
            f.connect_ex(silent.getsockname())
        proxy = LinkProxy()
        try:
            port = proxy.add_route("127.0.0.1", silent.getsockname())
            c = socket.create_connection(("127.0.0.1", port), timeout=5)
            deadline = time.monotonic() + 10
            while proxy.accepted(port) == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert proxy.accepted(port) == 1  # accepted by the proxy, whose own connect is pending
        finally:
            proxy.close()
            for f in fillers:
                f.close()
        with c:
            c.settimeout(5)
            with pytest.raises(ConnectionResetError):
                c.recv(10)
