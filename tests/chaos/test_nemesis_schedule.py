"""The nemesis schedule: seeded, one fault at a time, a quiet end."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from pathlib import Path

from chaos.history import HistoryRecorder, read_history
from chaos.nemesis import FAULTS, SCENARIOS, schedule
from chaos.nemesis import LINK_FAULTS, LONG_FAULT_PRODUCER, LONG_FAULTS, LONG_PARTITION, Nemesis, ScheduledFault
from chaos import testbed as testbed_module
from chaos.linkproxy import Toxics


@settings(max_examples=200, deadline=None)
@given(scenario=st.sampled_from(sorted(SCENARIOS)), seed=st.integers(0, 2**32), duration=st.floats(10, 600))
def test_faults_never_overlap_and_end_before_the_quiet_time(scenario, seed, duration) -> None:
    faults = schedule(scenario, seed, duration)
    assert faults == schedule(scenario, seed, duration)  # the seed decides everything
    for before, after in zip(faults, faults[1:]):
        assert before.start_s + before.duration_s < after.start_s
    for fault in faults:
        assert fault.kind in SCENARIOS[scenario]
        assert fault.start_s > 0 and fault.start_s + fault.duration_s <= duration - 5.0


def test_a_long_mixed_run_draws_every_fault_and_seeds_differ() -> None:
    faults = schedule("mixed", 7, 3600)
    assert {f.kind for f in faults} == set(FAULTS) | set(LINK_FAULTS) | {"mute-clients"}
    assert schedule("mixed", 8, 3600) != faults


def test_unknown_scenario() -> None:
    with pytest.raises(ValueError, match="unknown scenario 'nope'; known: "):
        schedule("nope", 1, 60)


# -- slow and lossy links, long faults ------------------------------------------------------------
class RecordingTestbed:
    """Stands in for NetworkTestbed (its real commands: tests/chaos/test_testbed.py): records each call."""

    def __init__(self, fail_on: str = "") -> None:
        self.calls: list[tuple] = []
        self.fail_on = fail_on

    def __getattr__(self, name):
        def call(*args, **kwargs):
            self.calls.append((name, args, kwargs))
            if name == self.fail_on:
                raise testbed_module.TestbedError(f"{name} failed")
        return call


def link_nemesis(tmp_path, testbed) -> tuple[Nemesis, Path]:
    path = tmp_path / "history.jsonl"
    nemesis = Nemesis(cluster=None, nodes=[1, 2, 3, 4, 5, 6], brokers=[4, 5, 6], history=HistoryRecorder(path),
                      testbed=testbed, partition_leader=lambda: 5, active_controller=lambda: 2,
                      client_ports=(9094,))
    return nemesis, path


@pytest.mark.parametrize("kind", LINK_FAULTS + ("mute-clients",))
def test_each_link_fault_is_seeded_recorded_and_healed(tmp_path, kind) -> None:
    runs = []
    for _ in range(2):
        testbed = RecordingTestbed()
        nemesis, path = link_nemesis(tmp_path, testbed)
        nemesis.start(ScheduledFault(1.0, kind, 2.0, seed=42))
        assert testbed.calls and all(name != "heal" for name, _, _ in testbed.calls)
        nemesis.stop()
        assert testbed.calls[-1][0] == "heal"
        nemesis.history.close()
        lines = [line for line in read_history(path) if line["process"] == "nemesis"]
        assert [line["value"]["phase"] for line in lines] == ["start", "stop"] and lines[0]["f"] == kind
        runs.append((testbed.calls, lines[0]["value"]))
    assert runs[0] == runs[1]  # the seed decides every choice
    calls, details = runs[0]
    if kind == "slow-follower":
        assert details["leader"] == 5 and details["nodes"][0] in (4, 6)
        assert {name for name, _, _ in calls} == {"proxy_link", "shape", "proxied_connections", "heal"}
    if kind == "slow-controller":
        proxied = [args[:2] for name, args, _ in calls if name == "proxy_link"]
        assert sorted(proxied) == [(n, 2) for n in (1, 3, 4, 5, 6)] and details["nodes"] == [2]
    if kind == "mute-clients":
        assert [args for name, args, _ in calls if name == "mute"] == [(b, (9094,)) for b in (4, 5, 6)]


def test_a_half_made_link_fault_is_healed_and_the_error_raised(tmp_path) -> None:
    testbed = RecordingTestbed(fail_on="shape")
    nemesis, _ = link_nemesis(tmp_path, testbed)
    with pytest.raises(testbed_module.TestbedError, match="shape failed"):
        nemesis.start(ScheduledFault(1.0, "slow-follower", 2.0, seed=1))
    assert [name for name, _, _ in testbed.calls] == ["proxy_link", "shape", "heal"]
    nemesis.history.close()


def test_link_faults_without_a_leader_or_a_testbed_are_skipped(tmp_path) -> None:
    nemesis, _ = link_nemesis(tmp_path, None)
    nemesis.start(ScheduledFault(1.0, "stall-link", 2.0, seed=1))
    nemesis.testbed = RecordingTestbed()
    nemesis.partition_leader = lambda: None
    nemesis.start(ScheduledFault(1.0, "slow-follower", 2.0, seed=1))
    assert len(nemesis.skipped) == 2 and "testbed" in nemesis.skipped[0] and "leads" in nemesis.skipped[1]
    nemesis.history.close()


def test_long_faults_outlast_the_producers_delivery_timeout() -> None:
    limit_s = max(LONG_FAULT_PRODUCER.values()) / 1000
    for seed in range(20):
        faults = schedule(LONG_PARTITION, seed, 120)
        assert faults and all(f.duration_s > limit_s for f in faults)
        assert {f.kind for f in faults} <= set(LONG_FAULTS)


def test_a_link_fault_this_kernel_refuses_is_skipped_and_what_it_made_healed(tmp_path) -> None:
    class Refusing(RecordingTestbed):
        def shape(self, *args, **kwargs):
            self.calls.append(("shape", args, kwargs))
            raise testbed_module.FaultUnsupported("tc: no tbf here")
    testbed = Refusing()
    nemesis, path = link_nemesis(tmp_path, testbed)
    nemesis.start(ScheduledFault(1.0, "slow-follower", 2.0, seed=1))
    assert [name for name, _, _ in testbed.calls] == ["proxy_link", "shape", "heal"]
    assert nemesis.skipped and "no tbf" in nemesis.skipped[0]
    nemesis.history.close()
    [line] = [line for line in read_history(path) if line["process"] == "nemesis"]
    assert line["value"] == {"phase": "skipped", "reason": "tc: no tbf here"}


def test_a_delay_without_netem_slows_everything_the_node_sends_to_the_others_through_the_proxy(tmp_path) -> None:
    """netem's egress delay, made by the link proxy: the node's requests to
    every other node (upstream) and its answers to every other node's
    requests (downstream), each to the listener of the node it reaches."""
    class NoNetem(RecordingTestbed):
        def delay(self, *args, **kwargs):
            self.calls.append(("delay", args, kwargs))
            raise testbed_module.FaultUnsupported("no sch_netem")
    testbed = NoNetem()
    nemesis, path = link_nemesis(tmp_path, testbed)
    nemesis.broker_port, nemesis.controller_port = 9092, 9093
    nemesis.start(ScheduledFault(1.0, "delay", 2.0, seed=7))
    nemesis.stop()
    nemesis.history.close()
    [start] = [line["value"] for line in read_history(path) if line["process"] == "nemesis"
               and line["value"]["phase"] == "start"]
    node, delay_ms = start["nodes"][0], start["delay_ms"]
    assert start["via"] == "link-proxy" and "no sch_netem" in start["netem"]
    proxied = {(args[0], args[1]): (tuple(args[2]), kwargs) for name, args, kwargs in testbed.calls
               if name == "proxy_link"}
    others = [n for n in range(1, 7) if n != node]
    port = {n: 9092 if n in (4, 5, 6) else 9093 for n in range(1, 7)}
    assert set(proxied) == {(node, o) for o in others} | {(o, node) for o in others}
    for other in others:
        ports, out = proxied[(node, other)]
        assert ports == (port[other],) and out["upstream"].latency_ms == delay_ms
        assert out.get("downstream", Toxics()) == Toxics()
        ports, back = proxied[(other, node)]
        assert ports == (port[node],) and back["downstream"].latency_ms == delay_ms
        assert back.get("upstream", Toxics()) == Toxics()
    assert [name for name, _, _ in testbed.calls][-2:] == ["proxied_connections", "heal"]


def test_a_delay_with_netem_uses_netem(tmp_path) -> None:
    testbed = RecordingTestbed()
    nemesis, path = link_nemesis(tmp_path, testbed)
    nemesis.start(ScheduledFault(1.0, "delay", 2.0, seed=7))
    nemesis.stop()
    nemesis.history.close()
    assert [name for name, _, _ in testbed.calls] == ["delay", "heal"]
