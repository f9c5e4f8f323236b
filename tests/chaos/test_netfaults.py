"""The tc and iptables commands behind slow and lossy links (pure builders)."""
from __future__ import annotations

import pytest

from chaos.netfaults import ADD, DELETE, clear_qdisc, htb, loss, mute, redirect, tbf


def test_tbf_caps_one_interface() -> None:
    assert tbf("eth0", 1024) == ["tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", "1024kbit",
                                 "burst", "32768", "latency", "2000ms"]
    assert clear_qdisc("klv1") == ["tc", "qdisc", "del", "dev", "klv1", "root"]


def test_htb_slows_only_the_named_destinations() -> None:
    commands = htb("eth0", 512, ["10.0.0.2", "10.0.0.3"])
    assert commands[0] == ["tc", "qdisc", "replace", "dev", "eth0", "root", "handle", "1:", "htb", "default", "20"]
    assert "512kbit" in commands[2] and commands[2][commands[2].index("classid") + 1] == "1:10"
    filters = [c for c in commands if c[:3] == ["tc", "filter", "add"]]
    assert [f[f.index("dst") + 1] for f in filters] == ["10.0.0.2/32", "10.0.0.3/32"]
    assert all(f[-2:] == ["flowid", "1:10"] for f in filters)


@pytest.mark.parametrize("rate", [0, 7, -1, 10**9, 1.5, True, "1mbit"])
def test_bad_rates(rate) -> None:
    with pytest.raises(ValueError, match="bandwidth cap"):
        tbf("eth0", rate)
    with pytest.raises(ValueError, match="bandwidth cap"):
        htb("eth0", rate, ["10.0.0.2"])


def test_htb_needs_a_destination() -> None:
    with pytest.raises(ValueError, match="destination"):
        htb("eth0", 512, [])


def test_loss_goes_on_the_receivers_input_and_heals_with_the_same_rule() -> None:
    hurt = loss(ADD, 0.25, source="10.0.0.1")
    assert hurt == ["iptables", "-A", "INPUT", "-s", "10.0.0.1", "-m", "statistic", "--mode", "random",
                    "--probability", "0.2500", "-j", "DROP"]
    assert loss(DELETE, 0.25, source="10.0.0.1") == ["iptables", "-D", *hurt[2:]]
    assert "-s" not in loss(ADD, 1.0)
    for bad in (0, -0.1, 1.01):
        with pytest.raises(ValueError, match="probability"):
            loss(ADD, bad)
    with pytest.raises(ValueError, match="action"):
        loss("-F", 0.5)


def test_redirect_steers_new_connections_and_resets_old_ones() -> None:
    nat, reject = redirect(ADD, "10.0.0.2", 9092, "10.0.0.254", 40001)
    assert nat == ["iptables", "-t", "nat", "-A", "OUTPUT", "-d", "10.0.0.2", "-p", "tcp", "--dport", "9092",
                   "-j", "DNAT", "--to-destination", "10.0.0.254:40001"]
    assert reject == ["iptables", "-A", "OUTPUT", "-d", "10.0.0.2", "-p", "tcp", "--dport", "9092",
                      "-j", "REJECT", "--reject-with", "tcp-reset"]
    assert [r[r.index("-D")] for r in redirect(DELETE, "10.0.0.2", 9092, "10.0.0.254", 40001)] == ["-D", "-D"]
    for port in (0, 65536, "9092"):
        with pytest.raises(ValueError, match="port"):
            redirect(ADD, "10.0.0.2", port, "10.0.0.254", 40001)


def test_mute_drops_only_the_answers_from_the_given_ports_on_the_runs_bridge() -> None:
    rules = mute(ADD, "klbrabc", "10.0.0.4", [9092, 9094])
    assert rules == [["iptables", "-A", "INPUT", "-i", "klbrabc", "-s", "10.0.0.4", "-p", "tcp", "--sport", str(p),
                      "-j", "DROP"] for p in (9092, 9094)]
    with pytest.raises(ValueError, match="port"):
        mute(ADD, "klbrabc", "10.0.0.4", [70000])
