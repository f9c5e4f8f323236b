"""Kafka's reassignment JSON files read strictly, and the CLI's pure parts
(proposal, verify states, hostile files refused before any broker is asked): no cluster.
The throttles a move sets are t20-throttle's (tests/client/test_reassignment_throttles.py on main)."""
from __future__ import annotations

import json

import pytest

from client.reassignment_json import parse_reassignment, parse_topics_to_move, reassignment_json
from kraftlog.commands.reassign_partitions import partition_states, propose
from metadata_quorum.controller.assignment import PlacementBroker


def test_a_file_kafka_writes_reads_back_and_is_written_as_kafka_writes_it():
    text = ('{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[2,3],"log_dirs":["any","any"]},'
            '{"topic":"t","partition":0,"replicas":[3,1]}]}')
    targets = parse_reassignment(text)
    assert targets == {("t", 1): [2, 3], ("t", 0): [3, 1]}
    assert json.loads(reassignment_json(targets)) == {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [3, 1], "log_dirs": ["any", "any"]},
        {"topic": "t", "partition": 1, "replicas": [2, 3], "log_dirs": ["any", "any"]}]}
    assert parse_topics_to_move('{"topics":[{"topic":"a"},{"topic":"b"},{"topic":"a"}],"version":1}') == ["a", "b"]


@pytest.mark.parametrize("text, complaint", [
    ("", "not JSON"),
    ("[1]", "one JSON object"),
    ('{"version":2,"partitions":[]}', "unsupported version"),
    ('{"version":true,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}', "unsupported version"),
    ('{"partitions":{}}', "must be a list"),
    ('{"partitions":[]}', "no partitions"),
    ('{"partitions":[], "extra": 1}', "unknown field"),
    ('{"partitions":[7]}', "not an object"),
    ('{"partitions":[{"topic":"","partition":0,"replicas":[1]}]}', "topic must be"),
    ('{"partitions":[{"topic":5,"partition":0,"replicas":[1]}]}', "topic must be"),
    ('{"partitions":[{"topic":"t","partition":-1,"replicas":[1]}]}', "partition must be"),
    ('{"partitions":[{"topic":"t","partition":2147483648,"replicas":[1]}]}', "partition must be"),
    ('{"partitions":[{"topic":"t","partition":"0","replicas":[1]}]}', "partition must be"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[]}]}', "non-empty list"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":null}]}', "non-empty list"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}', "more than once"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[-3]}]}', "broker ids"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1.5]}]}', "broker ids"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[true]}]}', "broker ids"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/data"]}]}', "only the log directory"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}', "one directory per"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}',
     "listed more than once"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1],"replica":[2]}]}', "unknown field"),
    ("[" * 100_000 + "]" * 100_000, "not JSON"),
])
def test_a_hostile_reassignment_file_is_refused_naming_what_is_wrong(text, complaint):
    with pytest.raises(ValueError, match=complaint):
        parse_reassignment(text)


@pytest.mark.parametrize("text", ['{"topics":[]}', '{"topics":[{"topic":"t","x":1}]}', '{"topics":[{"topic":null}]}',
                                  '{"topics":"t"}', '{"version":1}'])
def test_a_hostile_topics_file_is_refused(text):
    with pytest.raises(ValueError):
        parse_topics_to_move(text)


def test_generate_proposes_each_topic_with_its_factor_over_the_brokers_given():
    current = {("t", 0): [1, 2], ("t", 1): [2, 1], ("u", 0): [1]}
    proposed = propose(current, [PlacementBroker(2), PlacementBroker(3), PlacementBroker(4)])
    assert set(proposed) == set(current)
    assert all(len(proposed[tp]) == len(current[tp]) for tp in current)
    assert all(set(r) <= {2, 3, 4} and len(set(r)) == len(r) for r in proposed.values())
    assert proposed[("t", 0)][0] != proposed[("t", 1)][0]  # leaders spread
    with pytest.raises(Exception, match="INVALID_REPLICATION_FACTOR"):
        propose(current, [PlacementBroker(9)])


def test_verify_tells_each_partition_apart():
    targets = {("t", 0): [2, 3], ("t", 1): [2, 3], ("t", 2): [1, 3], ("gone", 0): [1]}
    current = {("t", 0): [2, 3, 1], ("t", 1): [2, 3], ("t", 2): [1, 2]}
    states = partition_states(targets, current, {("t", 0): {}})
    assert [(s["topic"], s["partition"], s["state"]) for s in states] == [
        ("gone", 0, "missing"), ("t", 0, "in progress"), ("t", 1, "completed"), ("t", 2, "elsewhere")]


def test_the_cli_refuses_a_hostile_file_in_one_line_before_asking_any_broker(tmp_path):
    import os

    from tests.cli_process import run_cli
    bad = tmp_path / "bad.json"
    bad.write_text('{"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}')
    env = {**os.environ, "KRAFTLOG_BOOTSTRAP": "127.0.0.1:1"}  # nothing listens: never reached
    for args, complaint in (
            (["--execute", "--reassignment-json-file", str(bad)], "list a broker more than once"),
            (["--verify", "--reassignment-json-file", str(tmp_path / "missing.json")], "missing.json"),
            (["--execute", "--verify"], "exactly one of"),
            (["--generate", "--topics-to-move-json-file", str(bad), "--broker-list", "1,x"], "--topics-to-move"),
            (["--list", "--throttle", "5"], "--throttle")):
        done = run_cli(["reassign-partitions", *args], env, "", timeout=60)
        assert done.returncode != 0 and "Traceback" not in done.stderr, (args, done.stderr)
        assert complaint in done.stderr and len(done.stderr.strip().splitlines()) == 1, (args, done.stderr)
