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
        testbed.mute("a", [7000])  # a rule in the root namespace and a proxy thread: both go too
        testbed.proxy_link("a", "b", [7000])
        testbed.close()
        assert f"klbr{testbed.run_id}" not in subprocess.run(["iptables", "-S", "INPUT"], capture_output=True,
                                                             text=True).stdout
        assert testbed._proxy is None
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


# -- slow and lossy links without netem ---------------------------------------------------------
def qdiscs(bed: NetworkTestbed, name: str) -> str:
    return subprocess.run([*bed.exec_prefix(name), "tc", "qdisc", "show", "dev", "eth0"], capture_output=True,
                          text=True, timeout=10).stdout


def test_slow_and_lossy_links_are_made_and_all_healed_at_once(bed) -> None:
    """One bed for all (each costs seconds): a lossy directed link, bandwidth
    caps both ways and per link, a link through the proxy (resetting every
    connection proves the link goes through it), the answers to the run's own
    process muted - then one heal removes every qdisc, rule and the proxy."""
    import socket
    bed.loss("3", 1.0, source="1")
    bed.shape("1", 1024)
    bed.shape("2", 512, inbound=True)
    bed.shape_link("3", ["1"], 256)
    bed.proxy_link("1", "2", [7000], reset_after_ms=0)
    bed.mute("2", [7000])
    assert "tbf" in qdiscs(bed, "1") and "htb" in qdiscs(bed, "3")
    assert "tbf" in subprocess.run(["tc", "qdisc", "show", "dev", bed.hosts["2"].host_veth], capture_output=True,
                                   text=True, timeout=10).stdout
    assert not reach(bed, "1", "2")  # reset by the proxy
    assert not reach(bed, "1", "3")  # every packet from 1 lost at 3
    assert reach(bed, "3", "2", timeout=5) and reach(bed, "2", "3", timeout=5)  # slow, not cut; other links fine
    with pytest.raises(OSError):
        socket.create_connection((bed.address("2"), 7000), timeout=1).close()
    bed.heal()
    assert reach(bed, "1", "2", timeout=5) and reach(bed, "1", "3", timeout=5)
    with socket.create_connection((bed.address("2"), 7000), timeout=5) as c:
        assert c.recv(10) == b"hello\n"
    assert "tbf" not in qdiscs(bed, "1") and "htb" not in qdiscs(bed, "3")
    assert "tbf" not in subprocess.run(["tc", "qdisc", "show", "dev", bed.hosts["2"].host_veth],
                                       capture_output=True, text=True, timeout=10).stdout
    nat = subprocess.run([*bed.exec_prefix("1"), "iptables", "-t", "nat", "-S", "OUTPUT"], capture_output=True,
                         text=True, timeout=10).stdout
    assert "DNAT" not in nat and bed.proxied_connections() is None
    assert bed.bridge not in subprocess.run(["iptables", "-S", "INPUT"], capture_output=True, text=True).stdout
