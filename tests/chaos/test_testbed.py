"""The network testbed with real namespaces: reachability, partitions, one-way drops, loss, heal, cleanup."""
from __future__ import annotations

import subprocess
import sys

import pytest

from chaos.testbed import FaultUnsupported, NetworkTestbed, probe

CAPABILITIES = probe()
pytestmark = pytest.mark.skipif(not (CAPABILITIES.namespaces and CAPABILITIES.iptables),
                                reason=f"no network testbed here: {CAPABILITIES.explain()}")

# Listens on the host's address, answers one line per connection, for 20 s at most.
ECHO_SERVER = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 7000)); s.listen(); s.settimeout(20)
print("ready", flush=True)
end = time.monotonic() + 20
while time.monotonic() < end:
    try:
        c, _ = s.accept()
    except OSError:
        break
    c.sendall(b"hello\\n"); c.close()
"""
CLIENT = """
import socket, sys
try:
    c = socket.create_connection((sys.argv[1], 7000), timeout=float(sys.argv[2]))
    print(c.recv(10).decode().strip())
except OSError as exc:
    print("unreachable", type(exc).__name__)
"""


def reach(bed: NetworkTestbed, source: str, destination: str, timeout: float = 1.0) -> bool:
    done = subprocess.run([*bed.exec_prefix(source), sys.executable, "-c", CLIENT, bed.address(destination),
                           str(timeout)], capture_output=True, text=True, timeout=30)
    return done.stdout.strip() == "hello"


@pytest.fixture
def bed():
    testbed = NetworkTestbed(["1", "2", "3"])
    servers = []
    try:
        testbed.create()
        for name in testbed.hosts:
            p = subprocess.Popen([*testbed.exec_prefix(name), sys.executable, "-c", ECHO_SERVER,
                                  testbed.address(name)], stdout=subprocess.PIPE, text=True)
            servers.append(p)
            assert p.stdout.readline().strip() == "ready"
        yield testbed
    finally:
        for p in servers:
            p.kill()
            p.wait()
        testbed.close()


def names_of_run(run_id: str) -> tuple[list[str], list[str]]:
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return ([line for line in netns.splitlines() if run_id in line],
            [line for line in links.splitlines() if run_id in line])


def test_hosts_reach_each_other_and_the_root_namespace(bed) -> None:
    assert len({bed.address(h) for h in bed.hosts}) == 3
    assert reach(bed, "1", "2") and reach(bed, "3", "1")
    import socket
    with socket.create_connection((bed.address("2"), 7000), timeout=5) as c:  # from the run's own process
        assert c.recv(10) == b"hello\n"


def test_partition_cuts_both_ways_and_heal_restores(bed) -> None:
    bed.partition([{"1"}, {"2", "3"}])
    assert not reach(bed, "1", "2") and not reach(bed, "2", "1") and not reach(bed, "3", "1")
    assert reach(bed, "2", "3")  # inside a side, nothing changed
    bed.heal()
    assert reach(bed, "1", "2") and reach(bed, "2", "1")


def test_one_way_drop(bed) -> None:
    bed.drop("1", "2")  # 2 ignores 1: no connection either way completes from 1, 2's SYN-ACKs are fine to 3
    assert not reach(bed, "1", "2")
    assert reach(bed, "3", "2") and reach(bed, "2", "3")
    bed.heal()
    assert reach(bed, "1", "2")


def test_total_loss_is_a_cut_and_heals(bed) -> None:
    bed.loss("2", 1.0)
    assert not reach(bed, "1", "2")
    bed.heal()
    assert reach(bed, "1", "2")


def test_delay_needs_netem(bed) -> None:
    if CAPABILITIES.netem:
        bed.delay("2", 50)
        assert reach(bed, "1", "2", timeout=5)
        bed.heal()
    else:
        with pytest.raises(FaultUnsupported, match="netem"):
            bed.delay("2", 50)


def test_close_removes_everything_even_with_processes_inside() -> None:
    testbed = NetworkTestbed(["a", "b"]).create()
    sleeper = subprocess.Popen([*testbed.exec_prefix("a"), "sleep", "60"])
    try:
        assert names_of_run(testbed.run_id) != ([], [])
        testbed.close()
        assert sleeper.wait(timeout=10) == -9  # killed by close(), not left behind
        assert names_of_run(testbed.run_id) == ([], [])
        testbed.close()  # twice is fine
    finally:
        sleeper.kill()
        testbed.close()


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="repeat"):
        NetworkTestbed(["1", "1"])
    with NetworkTestbed(["1"]) as testbed:
        with pytest.raises(ValueError, match="probability"):
            testbed.loss("1", 1.5)
