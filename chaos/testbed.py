"""Test hosts: each node of a cluster in its own Linux network namespace.

A `NetworkTestbed` makes, for one run, a bridge in the root namespace and one
namespace per host, joined to the bridge by a veth pair, each with its own
address on a /24 that no interface of this machine uses. The run's process
(the workload's clients) stays in the root namespace and reaches every host
through the bridge's address; servers are started inside a host with
`exec_prefix(host)`. Faults between hosts are real: iptables rules inside the
namespaces drop packets (partitions, one-way drops, random loss), and
`tc netem` delays them where the kernel has netem. Slow links without netem
(chaos/netfaults.py builds the commands): `tbf`/`htb` caps on the veths,
loss from one source, delay, jitter, stalls and resets through a TCP proxy
(chaos/linkproxy.py) in the run's process that a directed link is steered
to, and the brokers' answers to the run's own clients dropped (`mute`).

Names carry a per-run id so that runs never collide, and `close()` removes
every namespace, link and rule the run made, and kills processes left in
its namespaces - also after a failure (use it as a context manager).

`probe()` tells whether this machine can host a testbed and, if not, why:
callers skip the network faults with that reason and still run the process
faults on 127.0.0.1.
"""
from __future__ import annotations

import ipaddress
import os
import secrets
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from . import netfaults
from .linkproxy import LinkProxy, Toxics

BRIDGE_HOST = 254  # the bridge's own address in the run's /24 (the clients' side)
COMMAND_TIMEOUT_S = 10.0


class TestbedError(RuntimeError):
    """A command that builds or changes the testbed failed."""


class FaultUnsupported(TestbedError):
    """This kernel lacks what a fault needs (e.g. sch_netem for delays)."""


@dataclass(frozen=True)
class Capabilities:
    namespaces: bool  # root, `ip`, and a namespace can be made
    iptables: bool  # partitions, one-way drops and loss
    netem: bool  # delays (and netem loss)
    reasons: tuple[str, ...] = ()  # why something is missing

    def explain(self) -> str:
        return "; ".join(self.reasons) or "network faults available"


@dataclass(frozen=True)
class TestHost:
    name: str  # the caller's name for the host (a node id)
    netns: str
    address: str
    host_veth: str  # the end on the bridge, in the root namespace


def _run(args: Sequence[str], *, check: bool = True, input_text: Optional[str] = None) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(list(args), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
                              input=input_text)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TestbedError(f"{' '.join(args)}: {exc}") from exc
    if check and done.returncode != 0:
        raise TestbedError(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return done


def probe() -> Capabilities:
    """What this machine offers, found by trying it (a namespace made and removed)."""
    reasons: list[str] = []
    if os.geteuid() != 0:
        return Capabilities(False, False, False, ("network faults need root (namespaces, iptables)",))
    if shutil.which("ip") is None:
        return Capabilities(False, False, False, ("`ip` (iproute2) is not installed",))
    name = f"kraftlog-probe-{secrets.token_hex(3)}"
    try:
        _run(["ip", "netns", "add", name])
    except TestbedError as exc:
        return Capabilities(False, False, False, (f"cannot make a network namespace: {exc}",))
    try:
        iptables = shutil.which("iptables") is not None
        if not iptables:
            reasons.append("iptables is not installed: no partitions or loss (apt-get install iptables)")
        else:
            done = _run(["ip", "netns", "exec", name, "iptables", "-A", "INPUT", "-s", "192.0.2.1", "-j", "DROP"],
                        check=False)
            if done.returncode != 0:
                iptables = False
                reasons.append(f"iptables does not work in a namespace: {done.stderr.strip()}")
        netem = False
        if shutil.which("tc") is None:
            reasons.append("tc is not installed: no delays")
        else:
            _run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"], check=False)
            done = _run(["ip", "netns", "exec", name, "tc", "qdisc", "add", "dev", "lo", "root", "netem",
                         "delay", "1ms"], check=False)
            netem = done.returncode == 0
            if not netem:
                reasons.append(f"this kernel has no netem qdisc (sch_netem): no delays ({done.stderr.strip()})")
        return Capabilities(True, iptables, netem, tuple(reasons))
    finally:
        _run(["ip", "netns", "del", name], check=False)


def _used_networks() -> list[ipaddress.IPv4Network]:
    done = _run(["ip", "-4", "-o", "addr", "show"], check=False)
    networks = []
    for line in done.stdout.splitlines():
        parts = line.split()
        if "inet" in parts:
            networks.append(ipaddress.ip_interface(parts[parts.index("inet") + 1]).network)
    return networks


def _free_subnet(run_id: str) -> ipaddress.IPv4Network:
    """A 10.x.y.0/24 no interface of this machine overlaps, picked from the run id."""
    used = _used_networks()
    start = int(run_id, 16)
    for step in range(1 << 16):
        n = (start + step) % (1 << 16)
        subnet = ipaddress.ip_network(f"10.{n >> 8}.{n & 0xFF}.0/24")
        if not any(subnet.overlaps(u) for u in used):
            return subnet
    raise TestbedError("no free 10.x.y.0/24 for the testbed")


@dataclass
class NetworkTestbed:
    """One run's hosts. Build with `create()` (or `with`), remove with `close()`."""

    host_names: Sequence[str]
    run_id: str = field(default_factory=lambda: secrets.token_hex(3))
    hosts: dict[str, TestHost] = field(default_factory=dict, init=False)
    bridge: str = field(default="", init=False)
    bridge_address: str = field(default="", init=False)
    _delayed: set[str] = field(default_factory=set, init=False)
    # slow-link faults in effect: (namespace or None for the root one, device) with a qdisc,
    # rules added in the root namespace, and the proxy of proxied links
    _shaped: set[tuple[Optional[str], str]] = field(default_factory=set, init=False)
    _root_rules: list[list[str]] = field(default_factory=list, init=False)
    _proxy: Optional[LinkProxy] = field(default=None, init=False)

    def __post_init__(self) -> None:
        if len(self.host_names) > 250:
            raise ValueError("a testbed holds at most 250 hosts")
        if len(set(self.host_names)) != len(self.host_names):
            raise ValueError(f"host names repeat: {list(self.host_names)}")
        self.host_names = [str(h) for h in self.host_names]

    # -- building and removing ----------------------------------------------------------------
    def create(self) -> "NetworkTestbed":
        subnet = _free_subnet(self.run_id)
        addresses = list(subnet.hosts())
        self.bridge = f"klbr{self.run_id}"  # interface names: at most 15 characters
        self.bridge_address = str(addresses[BRIDGE_HOST - 1])
        try:
            _run(["ip", "link", "add", self.bridge, "type", "bridge"])
            _run(["ip", "addr", "add", f"{self.bridge_address}/24", "dev", self.bridge])
            _run(["ip", "link", "set", self.bridge, "up"])
            for index, name in enumerate(self.host_names):
                host = TestHost(name=name, netns=f"kraftlog-{self.run_id}-{name}",
                                address=str(addresses[index]), host_veth=f"klv{self.run_id}{index}")
                self.hosts[name] = host
                _run(["ip", "netns", "add", host.netns])
                _run(["ip", "link", "add", host.host_veth, "type", "veth", "peer", "name", "eth0",
                      "netns", host.netns])
                _run(["ip", "link", "set", host.host_veth, "master", self.bridge, "up"])
                self._in(host, "ip", "addr", "add", f"{host.address}/24", "dev", "eth0")
                self._in(host, "ip", "link", "set", "eth0", "up")
                self._in(host, "ip", "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Remove everything this run made; safe to call twice and after a failed create()."""
        self._heal_slow_links()  # the proxy and the root namespace's rules outlive the namespaces
        for host in self.hosts.values():
            self._kill_processes_in(host)
            _run(["ip", "netns", "del", host.netns], check=False)
            _run(["ip", "link", "del", host.host_veth], check=False)  # gone with the namespace, normally
        self.hosts.clear()
        if self.bridge:
            _run(["ip", "link", "del", self.bridge], check=False)
            self.bridge = ""

    def _kill_processes_in(self, host: TestHost) -> None:
        done = _run(["ip", "netns", "pids", host.netns], check=False)
        for pid in done.stdout.split():
            try:
                os.kill(int(pid), signal.SIGCONT)
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass

    def __enter__(self) -> "NetworkTestbed":
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- using the hosts ----------------------------------------------------------------------
    def address(self, name: object) -> str:
        return self.hosts[str(name)].address

    def exec_prefix(self, name: object) -> list[str]:
        """Prepend to a command to run it inside the host's namespace."""
        return ["ip", "netns", "exec", self.hosts[str(name)].netns]

    def _in(self, host: TestHost, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return _run(["ip", "netns", "exec", host.netns, *args], check=check)

    # -- faults -------------------------------------------------------------------------------
    def partition(self, groups: Iterable[Iterable[object]]) -> None:
        """Cut the hosts into groups that cannot reach each other (both ways).
        Hosts named in no group keep reaching everyone (a bridge topology is
        two overlapping groups: pass them as such with `drop`)."""
        groups = [{str(h) for h in g} for g in groups]
        for i, group in enumerate(groups):
            others = set().union(*(g for j, g in enumerate(groups) if j != i)) - group
            for name in group:
                for other in others:
                    self.drop(other, name)

    def drop(self, source: object, destination: object) -> None:
        """Packets from `source` to `destination` are dropped (one way)."""
        src, dst = self.hosts[str(source)], self.hosts[str(destination)]
        self._in(dst, "iptables", "-A", "INPUT", "-s", src.address, "-j", "DROP")

    def loss(self, name: object, probability: float, source: Optional[object] = None) -> None:
        """Drop each packet arriving at the host with this probability (only
        those from `source`, a lossy directed link, when given)."""
        rule = netfaults.loss(netfaults.ADD, probability,
                              self.hosts[str(source)].address if source is not None else None)
        self._in(self.hosts[str(name)], *rule)

    def shape(self, name: object, rate_kbit: int, inbound: bool = False) -> None:
        """Cap the host's bandwidth (tbf): what it sends, or with `inbound`
        what it receives (the cap then sits on the bridge's end of its veth)."""
        host = self.hosts[str(name)]
        if inbound:
            self._fault(None, netfaults.tbf(host.host_veth, rate_kbit))
            self._shaped.add((None, host.host_veth))
        else:
            self._fault(host, netfaults.tbf("eth0", rate_kbit))
            self._shaped.add((host.netns, "eth0"))

    def shape_link(self, source: object, destinations: Iterable[object], rate_kbit: int) -> None:
        """Cap what `source` sends to `destinations` only (htb, u32 filters)."""
        host = self.hosts[str(source)]
        self._shaped.add((host.netns, "eth0"))  # before: a half-made htb is removed at heal too
        for command in netfaults.htb("eth0", rate_kbit, [self.hosts[str(d)].address for d in destinations]):
            self._fault(host, command)

    def proxy_link(self, source: object, destination: object, ports: Iterable[int], *, seed: int = 0,
                   upstream: Toxics = Toxics(), downstream: Toxics = Toxics(),
                   reset_after_ms: Optional[float] = None) -> dict[int, int]:
        """Send the connections `source` opens to `destination`'s `ports`
        through the run's link proxy with these toxics (upstream: what
        source sends; downstream: the answers). Connections already open on
        the link are reset once, so that all of it goes through the proxy.
        The proxy's port for each port."""
        src, dst = self.hosts[str(source)], self.hosts[str(destination)]
        if self._proxy is None:
            self._proxy = LinkProxy(seed)
        routes = {}
        for port in ports:
            routes[port] = self._proxy.add_route(self.bridge_address, (dst.address, port), upstream=upstream,
                                                 downstream=downstream, reset_after_ms=reset_after_ms)
            for rule in netfaults.redirect(netfaults.ADD, dst.address, port, self.bridge_address, routes[port]):
                self._fault(src, rule)
        return routes

    def _fault(self, host: Optional[TestHost], args: Sequence[str]) -> None:
        """Run a slow-link command in the host's namespace (None: the root one);
        a kernel or tool that refuses it makes the fault unsupported here, as
        netem's absence does for delays (the nemesis skips it, with the reason)."""
        try:
            _run([*(("ip", "netns", "exec", host.netns) if host is not None else ()), *args])
        except TestbedError as exc:
            raise FaultUnsupported(str(exc)) from exc

    def proxied_connections(self) -> Optional[int]:
        """Connections the link proxy has carried since the last heal; None when no link is proxied."""
        return self._proxy.accepted() if self._proxy is not None else None

    def mute(self, name: object, ports: Iterable[int]) -> None:
        """The host's answers from `ports` to the run's own process are
        dropped (requests still arrive and are carried out)."""
        for rule in netfaults.mute(netfaults.ADD, self.bridge, self.hosts[str(name)].address, list(ports)):
            self._fault(None, rule)
            self._root_rules.append(rule)

    def delay(self, name: object, delay_ms: int, jitter_ms: int = 0) -> None:
        """Delay packets leaving the host (netem); FaultUnsupported without sch_netem."""
        host = self.hosts[str(name)]
        args = ["tc", "qdisc", "replace", "dev", "eth0", "root", "netem", "delay", f"{delay_ms}ms"]
        if jitter_ms:
            args.append(f"{jitter_ms}ms")
        done = self._in(host, *args, check=False)
        if done.returncode != 0:
            raise FaultUnsupported(f"netem delay on {host.name}: {done.stderr.strip()}")
        self._delayed.add(host.name)

    def heal(self) -> None:
        """Remove every drop, loss, delay and slow link: all hosts reach each other again."""
        for host in self.hosts.values():
            self._in(host, "iptables", "-F", "INPUT", check=False)
            if host.name in self._delayed:
                self._in(host, "tc", "qdisc", "del", "dev", "eth0", "root", check=False)
        self._delayed.clear()
        self._heal_slow_links()

    def _heal_slow_links(self) -> None:
        by_netns = {h.netns: h for h in self.hosts.values()}
        for netns, device in self._shaped:
            if netns is None:
                _run(netfaults.clear_qdisc(device), check=False)
            elif netns in by_netns:
                self._in(by_netns[netns], *netfaults.clear_qdisc(device), check=False)
        self._shaped.clear()
        for rule in self._root_rules:
            _run([rule[0], netfaults.DELETE, *rule[2:]], check=False)
        self._root_rules.clear()
        if self._proxy is not None:
            for host in self.hosts.values():  # the steering rules; the proxy then resets what it carried
                self._in(host, "iptables", "-t", "nat", "-F", "OUTPUT", check=False)
                self._in(host, "iptables", "-F", "OUTPUT", check=False)
            self._proxy.close()
            self._proxy = None
