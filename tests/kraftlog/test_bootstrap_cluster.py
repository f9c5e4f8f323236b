"""The first super user on a real cluster: three controllers formatted with
the same bootstrap credentials (devcluster's `scram_users`) and a broker with
a SASL_PLAINTEXT listener. The user logs in after the first start; the
bootstrap records are in every node's metadata log exactly once, also after
every node restarted (each controller has the file, none appends it twice);
no node's file or log line holds the password."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from client.cluster import Cluster
from client.errors import KafkaError
from client.security_admin import describe_user_scram_credentials
from devcluster import launcher
from devcluster.local_processes import LocalProcesses, free_ports
from kafka_protocol.errors import InvalidConfigError
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller.bootstrap import BOOTSTRAP_FEATURE
from metadata_quorum.image import MetadataImage
from metadata_quorum.storage.metadata_log import MetadataLog
from metadata_quorum.storage.startup import METADATA_PARTITION_DIR
from security.client_security import ClientSecurity
from security.scram_credentials import ScramMechanism

SECRET = "c0rrect-horse-bootstrap"
CONTROLLERS, BROKER = (1, 2, 3), 4


def login(address: str, password: str) -> Cluster:
    return Cluster(address, ClientSecurity.from_config({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "admin", "sasl.password": password}))


def records_in_log(node_dir: Path) -> list[mpb.MetadataRecord]:
    """Every metadata record of a stopped node's metadata log, batches opened."""
    log = MetadataLog(node_dir / METADATA_PARTITION_DIR)
    try:
        entries = log.read_entries(0)
    finally:
        log.close()
    records = []
    for entry in entries:
        if entry.control:
            continue
        record = mpb.MetadataRecord.FromString(entry.data)
        records += record.batch.records if record.WhichOneof("record") == "batch" else [record]
    return records


def bootstrap_counts(processes: LocalProcesses) -> dict[int, tuple[int, int]]:
    """Node id -> (marker records, SCRAM credential records) in its metadata log,
    after checking the credential is in the image the log replays into."""
    counts = {}
    for node_id, plan in processes.plans.items():
        records = records_in_log(Path(plan.config.metadata_log_dir))
        image = MetadataImage()
        for offset, record in enumerate(records):
            image.apply_bytes(record.SerializeToString(), offset)
        assert image.scram_credential("admin", ScramMechanism.SCRAM_SHA_512) is not None, node_id
        counts[node_id] = (
            sum(r.WhichOneof("record") == "feature_level" and r.feature_level.name == BOOTSTRAP_FEATURE
                for r in records),
            sum(r.WhichOneof("record") == "user_scram_credential" for r in records))
    return counts


def start_and_wait(processes: LocalProcesses) -> None:
    processes.start()
    launcher.wait_for_brokers(tuple(processes.plans.values()), timeout=60)


def stop_all(processes: LocalProcesses) -> None:
    for node_id in (BROKER, *CONTROLLERS):
        assert processes.stop(node_id) == 0, processes.log_text(node_id)


def test_the_bootstrapped_user_logs_in_and_its_records_are_appended_once(tmp_path):
    ports = free_ports(5)
    sasl_address = f"127.0.0.1:{ports[4]}"
    spec = {
        "cluster.id": "Qm9vdHN0cmFwQ2x1c3Rlcg",
        "scram_users": {"admin": SECRET},
        "defaults": {"controller.quorum.election.timeout.ms": 1000},
        "nodes": [*({"node.id": i, "process.roles": "controller",
                     "listeners": f"CONTROLLER://127.0.0.1:{ports[i - 1]}"} for i in CONTROLLERS),
                  {"node.id": BROKER, "process.roles": "broker",
                   "listeners": f"PLAINTEXT://127.0.0.1:{ports[3]},SASL_PLAINTEXT://{sasl_address}",
                   "listener.security.protocol.map":
                       "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"}],
    }
    with LocalProcesses(tmp_path, spec) as processes:
        start_and_wait(processes)
        for plan in processes.plans.values():  # every controller has the file, the broker none
            assert (Path(plan.config.metadata_log_dir) / "bootstrap.checkpoint").exists() == plan.config.is_controller
        with login(sasl_address, SECRET) as admin:
            assert {m for m, _ in describe_user_scram_credentials(admin)["admin"]} == set(ScramMechanism)
        with login(sasl_address, SECRET + "-wrong") as intruder, pytest.raises(KafkaError) as refused:
            intruder.refresh()
        assert "SASL_AUTHENTICATION_FAILED" in str(refused.value)
        stop_all(processes)
        first = bootstrap_counts(processes)
        assert first == {node_id: (1, 2) for node_id in (*CONTROLLERS, BROKER)}

        start_and_wait(processes)  # every controller reads its file again; whichever leads appends nothing
        with login(sasl_address, SECRET) as admin:
            admin.refresh()
        stop_all(processes)
        assert bootstrap_counts(processes) == first
        for node_id, plan in processes.plans.items():
            for path in plan.home.rglob("*"):
                if path.is_file():
                    assert SECRET.encode() not in path.read_bytes(), path
        logs = "".join(processes.log_text(node_id) for node_id in CONTROLLERS)
        assert logs.count("appended its 3 bootstrap records") == 1
        assert "appends no bootstrap records: the metadata log holds its bootstrap records already" in logs


@pytest.mark.parametrize("users", ["admin", ["admin"], {"admin": ""}, {"": "pw"}, {"admin": 5}])
def test_scram_users_in_a_cluster_file_must_map_names_to_passwords(users):
    text = yaml.safe_dump({"cluster.id": "Qm9vdHN0cmFwQ2x1c3Rlcg", "scram_users": users, "nodes": []})
    with pytest.raises(InvalidConfigError, match="scram_users: expected a mapping"):
        launcher.parse_scram_users(text)


def test_scram_users_are_off_by_default_and_give_both_mechanisms(tmp_path):
    base = {"cluster.id": "Qm9vdHN0cmFwQ2x1c3Rlcg",
            "nodes": [{"node.id": 1, "process.roles": "controller", "listeners": "CONTROLLER://127.0.0.1:19091"}]}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(base))
    (plan,) = launcher.plan_cluster(path, tmp_path / "data")
    assert plan.scram_users == ()
    path.write_text(yaml.safe_dump({**base, "scram_users": {"admin": SECRET}}))
    (plan,) = launcher.plan_cluster(path, tmp_path / "data")
    assert {(s.name, s.mechanism) for s in plan.scram_users} == {("admin", m) for m in ScramMechanism}
    assert SECRET not in repr(plan)
