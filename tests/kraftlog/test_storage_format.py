"""`kraftlog storage format --add-scram`: the files it writes (no password in
them), the credentials they hold (a real SCRAM login against them), its
refusals (another cluster's or node's directory, a formatted one, bad
--add-scram text), and the bootstrap step an active controller takes."""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import scramp

from kraftlog_api import metadata_pb2 as mpb
from kafka_protocol.errors import InvalidConfigError
from kraftlog.cli import main
from metadata_quorum.controller.bootstrap import (
    BOOTSTRAP_FEATURE, bootstrap_marker, bootstrap_step, check_bootstrap_records,
)
from metadata_quorum.image import MetadataImage
from metadata_quorum.image.security_records import credential_from_record
from metadata_quorum.storage import CorruptSnapshotError, MetaProperties
from metadata_quorum.storage.bootstrap_checkpoint import read_bootstrap_checkpoint
from security.scram_config import STORAGE_KEYS, parse_scram_setting
from security.scram_credentials import ScramMechanism, salted_password
from tests.cli_process import run_cli

SECRET = "Tr0ub4dor-bootstrap-pw"
CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"


def node_file(tmp_path: Path, node_id: int = 1, cluster_id: str = CLUSTER, roles: str = "controller") -> Path:
    path = tmp_path / f"node-{node_id}-{cluster_id}.yaml"
    path.write_text(textwrap.dedent(f"""\
        node.id: {node_id}
        process.roles: {roles}
        cluster.id: {cluster_id}
        controller.quorum.voters: {node_id}@127.0.0.1:19093
        listeners: CONTROLLER://127.0.0.1:19093
        log.dirs: {tmp_path / 'data'}
        """))
    return path


def kraftlog(*args: str) -> subprocess.CompletedProcess:
    return run_cli(args, os.environ, timeout=60)


def no_secret_in(*texts: str) -> None:
    for text in texts:
        assert SECRET not in text


def files_hold_no_secret(directory: Path) -> None:
    for path in directory.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert SECRET.encode() not in data and base64.b64encode(SECRET.encode()) not in data, path


def test_format_writes_meta_properties_and_a_bootstrap_checkpoint_that_logs_in(tmp_path):
    done = kraftlog("storage", "format", "--config", str(node_file(tmp_path)), "--cluster-id", CLUSTER,
                    "--add-scram", f"SCRAM-SHA-512=[name=admin,password={SECRET},iterations=8192]",
                    "--add-scram", f'SCRAM-SHA-256=[name=admin,password="{SECRET},with,commas"]')
    assert done.returncode == 0, done.stderr
    assert "with 2 SCRAM credentials" in done.stdout
    no_secret_in(done.stdout, done.stderr)
    data = tmp_path / "data"
    assert sorted(p.name for p in data.iterdir()) == ["bootstrap.checkpoint", "meta.properties"]
    assert _ids(MetaProperties.read(data)) == (CLUSTER, 1)
    files_hold_no_secret(data)
    records = read_bootstrap_checkpoint(data)
    check_bootstrap_records(records)
    assert records[0] == bootstrap_marker()
    creds = {(r.user_scram_credential.name, ScramMechanism(r.user_scram_credential.mechanism)):
             credential_from_record(r.user_scram_credential) for r in records[1:]}
    assert {(k, c.iterations) for k, c in creds.items()} == {
        (("admin", ScramMechanism.SCRAM_SHA_512), 8192), (("admin", ScramMechanism.SCRAM_SHA_256), 4096)}
    # The stored keys are the password's: a SCRAM exchange with them succeeds, with another password fails.
    sha512 = creds[("admin", ScramMechanism.SCRAM_SHA_512)]
    server_side = scramp.ScramMechanism("SCRAM-SHA-512")

    def login(password: str) -> None:
        info = (sha512.salt, sha512.stored_key, sha512.server_key, sha512.iterations)
        server = server_side.make_server(lambda user: info)
        client = scramp.ScramClient(["SCRAM-SHA-512"], "admin", password)
        server.set_client_first(client.get_client_first())
        client.set_server_first(server.get_server_first())
        server.set_client_final(client.get_client_final())
        client.set_server_final(server.get_server_final())

    login(SECRET)
    with pytest.raises(scramp.ScramException):
        login(SECRET + "x")


def test_salt_and_salted_password_are_taken_as_given(tmp_path):
    salt = os.urandom(16)
    salted = salted_password(ScramMechanism.SCRAM_SHA_256, SECRET, salt, 4096)
    done = kraftlog("storage", "format", "--config", str(node_file(tmp_path)), "--add-scram",
                    f'SCRAM-SHA-256=[name=alice,salt="{base64.b64encode(salt).decode()}",'
                    f'saltedpassword="{base64.b64encode(salted).decode()}",iterations=4096]')
    assert done.returncode == 0, done.stderr
    (record,) = [r.user_scram_credential for r in read_bootstrap_checkpoint(tmp_path / "data")[1:]]
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    assert (record.name, record.salt, record.stored_key) == ("alice", salt, hashlib.sha256(client_key).digest())


def test_a_formatted_directory_is_refused_or_left_alone_and_another_cluster_or_node_refused(tmp_path):
    config = str(node_file(tmp_path))
    assert kraftlog("storage", "format", "--config", config).returncode == 0
    before = (tmp_path / "data" / "bootstrap.checkpoint").read_bytes()
    again = kraftlog("storage", "format", "--config", config, "--add-scram", f"SCRAM-SHA-512=[name=a,password={SECRET}]")
    assert again.returncode == 1
    assert "is already formatted. Use --ignore-formatted" in again.stderr
    ignored = kraftlog("storage", "format", "--config", config, "--ignore-formatted")
    assert ignored.returncode == 0 and "already formatted" in ignored.stdout
    other_cluster = kraftlog("storage", "format", "--config", str(node_file(tmp_path, cluster_id="T3RoZXJDbHVzdGVy")),
                             "--ignore-formatted")
    assert other_cluster.returncode == 1
    assert (f"INCONSISTENT_CLUSTER_ID: Invalid cluster.id in: {tmp_path / 'data' / 'meta.properties'}. "
            f"Expected T3RoZXJDbHVzdGVy, but read {CLUSTER}") in other_cluster.stderr
    other_node = kraftlog("storage", "format", "--config", str(node_file(tmp_path, node_id=2)), "--ignore-formatted")
    assert other_node.returncode == 1 and "Stored node id 1 doesn't match previous node id 2" in other_node.stderr
    wrong_id = kraftlog("storage", "format", "--config", config, "--cluster-id", "T3RoZXJDbHVzdGVy")
    assert wrong_id.returncode == 1 and "is not the config's cluster.id" in wrong_id.stderr
    assert (tmp_path / "data" / "bootstrap.checkpoint").read_bytes() == before
    assert _ids(MetaProperties.read(tmp_path / "data")) == (CLUSTER, 1)


@pytest.mark.parametrize("text, error", [
    (f"SCRAM-SHA-512=[name=admin,password={SECRET},iterations=4095]", "iterations must be a number from 4096"),
    (f"SCRAM-SHA-512=[name=admin,password={SECRET},iterations=16385]", "iterations must be a number from 4096"),
    (f"SCRAM-SHA-512=[name=admin,password={SECRET},iterations=2147483648]", "iterations must be"),
    (f"SCRAM-SHA-512=[name=admin,password={SECRET},iterations=-1]", "iterations must be"),
    (f"SCRAM-SHA-512=[name=admin,password={SECRET}", "the text is not repeated"),
    (f"SCRAM-SHA-1=[name=admin,password={SECRET}]", "unknown SCRAM mechanism"),
    (f"SCRAM-SHA-512=[password={SECRET}]", "a name=... is required"),
    (f"SCRAM-SHA-512=[name=,password={SECRET}]", "a name=... is required"),
    ("SCRAM-SHA-512=[name=admin]", "password=... or salt=... with saltedpassword=... is required"),
    (f"SCRAM-SHA-512=[name=admin,pasword={SECRET}]", "'pasword'"),
    (f"SCRAM-SHA-512=[name=admin,password={SECRET},password={SECRET}]", "password is given twice"),
    (f'SCRAM-SHA-512=[name=admin,password="{SECRET}]', "double quote is not closed"),
    (f"SCRAM-SHA-512=[name=admin,salt={SECRET}!,saltedpassword=AAAA]", "salt is not base64"),
    (f"SCRAM-SHA-512=[name=admin,salt=c2FsdA==,saltedpassword={base64.b64encode(b'x' * 64).decode()}]",
     "The salt must be at least 12 bytes long"),
    (f"SCRAM-SHA-512=[name=admin,salt={base64.b64encode(b's' * 16).decode()},saltedpassword=AAAA]",
     "must be 64 bytes long"),
    (f"SCRAM-SHA-512=[name=admin,password={SECRET}],SCRAM-SHA-512=[name=admin,password={SECRET}2]",
     "given twice"),
])
def test_bad_add_scram_is_refused_without_echoing_it_and_writes_nothing(tmp_path, monkeypatch, capsys, text, error):
    # In-process (the entry point `kraftlog` runs), for speed: one case per process start would take a second.
    monkeypatch.setattr(sys, "argv", ["kraftlog", "storage", "format", "--config", str(node_file(tmp_path)),
                                      "--add-scram", text])
    with pytest.raises(SystemExit) as exited:
        main()
    out, err = capsys.readouterr()
    assert exited.value.code == 1 and error in err, err
    no_secret_in(out, err)
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())


def test_the_parser_keeps_secrets_out_of_its_repr():
    setting = parse_scram_setting("SCRAM-SHA-512", f"name=admin,password={SECRET}", STORAGE_KEYS)
    assert setting.password == SECRET and SECRET not in repr(setting)
    with pytest.raises(InvalidConfigError) as refused:
        parse_scram_setting("SCRAM-SHA-512", f"name=admin,password={SECRET}", {"iterations", "password"})
    assert SECRET not in str(refused.value)


def test_a_damaged_bootstrap_checkpoint_is_refused_by_name(tmp_path):
    assert kraftlog("storage", "format", "--config", str(node_file(tmp_path))).returncode == 0
    path = tmp_path / "data" / "bootstrap.checkpoint"
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptSnapshotError, match="bootstrap.checkpoint"):
        read_bootstrap_checkpoint(tmp_path / "data")


def scram_record(name: str) -> mpb.MetadataRecord:
    return mpb.MetadataRecord(user_scram_credential=mpb.UserScramCredentialRecord(
        name=name, mechanism=2, salt=b"s" * 16, stored_key=b"k" * 64, server_key=b"v" * 64, iterations=4096))


def test_the_bootstrap_step_appends_only_on_an_image_without_the_marker_or_credentials():
    records = [bootstrap_marker(), scram_record("admin")]
    image = MetadataImage()
    assert bootstrap_step(image, records).records == records
    for offset, record in enumerate(records):
        image.apply_bytes(record.SerializeToString(), offset)
    assert image.features[BOOTSTRAP_FEATURE] == 1
    assert bootstrap_step(image, records).records == []  # once: a second controller appends nothing
    operator_set = MetadataImage()
    operator_set.apply_bytes(scram_record("alice").SerializeToString(), 0)
    step = bootstrap_step(operator_set, records)
    assert step.records == [] and "no bootstrap marker" in step.reason
    with pytest.raises(ValueError, match="marker"):
        check_bootstrap_records([scram_record("admin")])
    with pytest.raises(ValueError, match="only user_scram_credential"):
        check_bootstrap_records([bootstrap_marker(), mpb.MetadataRecord(no_op=mpb.NoOpRecord())])


def _ids(meta: "MetaProperties | None") -> tuple[str, int] | None:
    """cluster.id and node.id (directory.id is a new random UUID each time)."""
    return None if meta is None else (meta.cluster_id, meta.node_id)
