"""The commands behind the testbed's slow and lossy links: pure builders of
`tc` and `iptables` argument lists (chaos/testbed.py runs them).

This kernel has no `sch_netem` (and no `police`/`gact` actions), so:
- bandwidth is capped with `tbf` (everything leaving one interface) or with
  `htb` plus a `u32` filter per destination (one directed link slower, the
  rest of the interface untouched);
- loss is iptables' `statistic --mode random` on the receiver's INPUT chain
  (on the sender's OUTPUT its own `sendto` fails with EPERM, which is not a
  lost packet but an error the sender sees);
- delay, jitter, stalls and resets go through a TCP proxy (chaos/linkproxy.py):
  the source's connections to the destination are steered to it with a DNAT
  rule in the source's namespace, and the source's connections made before
  the fault are reset once (a REJECT with a TCP reset matching only the
  un-NATed ones), so the whole link goes through the proxy from then on.

Every builder takes the iptables action (`-A` to add, `-D` to delete), so the
rule that heals is the same text as the rule that hurt.
"""
from __future__ import annotations

from typing import Optional

ADD, DELETE = "-A", "-D"
# tbf needs a bucket at least one MTU-sized packet deep, or nothing passes;
# 32 KiB lets a burst through at the start and then holds the rate.
TBF_BURST_BYTES = 32 * 1024
TBF_LATENCY_MS = 2000  # how long a packet may queue before tbf drops it
HTB_SLOW_CLASS, HTB_FAST_CLASS = "1:10", "1:20"
HTB_UNCAPPED_KBIT = 10_000_000  # the default class: as fast as the veth goes


def _rate_kbit(rate_kbit: int) -> int:
    if not isinstance(rate_kbit, int) or isinstance(rate_kbit, bool) or not 8 <= rate_kbit <= HTB_UNCAPPED_KBIT:
        raise ValueError(f"a bandwidth cap is 8..{HTB_UNCAPPED_KBIT} kbit/s, not {rate_kbit!r}")
    return rate_kbit


def tbf(device: str, rate_kbit: int) -> list[str]:
    """Cap everything leaving `device` at `rate_kbit`."""
    return ["tc", "qdisc", "replace", "dev", device, "root", "tbf", "rate", f"{_rate_kbit(rate_kbit)}kbit",
            "burst", str(TBF_BURST_BYTES), "latency", f"{TBF_LATENCY_MS}ms"]


def htb(device: str, rate_kbit: int, destinations: list[str]) -> list[list[str]]:
    """Cap only the packets leaving `device` for `destinations` (IPv4
    addresses) at `rate_kbit`; the rest go through the uncapped default class."""
    if not destinations:
        raise ValueError("htb needs at least one destination to slow down")
    rate = _rate_kbit(rate_kbit)
    commands = [
        ["tc", "qdisc", "replace", "dev", device, "root", "handle", "1:", "htb", "default", HTB_FAST_CLASS[2:]],
        ["tc", "class", "replace", "dev", device, "parent", "1:", "classid", HTB_FAST_CLASS, "htb",
         "rate", f"{HTB_UNCAPPED_KBIT}kbit"],
        ["tc", "class", "replace", "dev", device, "parent", "1:", "classid", HTB_SLOW_CLASS, "htb",
         "rate", f"{rate}kbit", "ceil", f"{rate}kbit", "burst", str(TBF_BURST_BYTES)],
    ]
    for address in destinations:
        commands.append(["tc", "filter", "add", "dev", device, "parent", "1:", "protocol", "ip", "prio", "1",
                         "u32", "match", "ip", "dst", f"{address}/32", "flowid", HTB_SLOW_CLASS])
    return commands


def clear_qdisc(device: str) -> list[str]:
    """Back to the interface's default queue (fails harmlessly when none was set)."""
    return ["tc", "qdisc", "del", "dev", device, "root"]


def loss(action: str, probability: float, source: Optional[str] = None) -> list[str]:
    """Drop each packet arriving (INPUT: run it in the receiver's namespace)
    with `probability`; only those from `source` when given."""
    if not 0 < probability <= 1:
        raise ValueError(f"loss probability must be in (0, 1]: {probability}")
    rule = ["iptables", _action(action), "INPUT"]
    if source is not None:
        rule += ["-s", source]
    return rule + ["-m", "statistic", "--mode", "random", "--probability", f"{probability:.4f}", "-j", "DROP"]


def redirect(action: str, destination: str, port: int, proxy_address: str, proxy_port: int) -> list[list[str]]:
    """Steer new TCP connections to destination:port (from the namespace the
    rules run in) to the proxy, and reset the ones opened before (their
    destination is not rewritten, so only they match the REJECT)."""
    _port(port)
    _port(proxy_port)
    match = ["-d", destination, "-p", "tcp", "--dport", str(port)]
    return [["iptables", "-t", "nat", _action(action), "OUTPUT", *match, "-j", "DNAT",
             "--to-destination", f"{proxy_address}:{proxy_port}"],
            ["iptables", _action(action), "OUTPUT", *match, "-j", "REJECT", "--reject-with", "tcp-reset"]]


def mute(action: str, bridge: str, source: str, ports: list[int]) -> list[list[str]]:
    """In the root namespace: drop what `source` sends from `ports` to the run's
    own process over `bridge` (the brokers' answers to the workload's clients).
    Requests still arrive and are carried out; only their answers are lost."""
    for port in ports:
        _port(port)
    return [["iptables", _action(action), "INPUT", "-i", bridge, "-s", source, "-p", "tcp", "--sport", str(port),
             "-j", "DROP"] for port in ports]


def _action(action: str) -> str:
    if action not in (ADD, DELETE):
        raise ValueError(f"an iptables action is {ADD} or {DELETE}, not {action!r}")
    return action


def _port(port: int) -> int:
    if not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"not a TCP port: {port!r}")
    return port
