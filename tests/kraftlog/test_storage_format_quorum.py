"""`kraftlog storage format --initial-controllers | --standalone` and `storage random-uuid`
(KIP-853): the initial voters written into bootstrap.checkpoint, each node's directory.id,
and the refusals (hostile lists, static voters, a broker, both options)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kafka_protocol.errors import InvalidConfigError
from kraftlog.cli import main
from kraftlog_server.server_config import ServerConfig
from kraftlog_server.storage_format import format_storage, parse_initial_controllers
from metadata_quorum.raft.voters import Endpoint, uuid_bytes
from metadata_quorum.storage import MetaProperties
from metadata_quorum.storage.bootstrap_checkpoint import read_bootstrap_checkpoint, read_bootstrap_voters

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"
DIR_1 = "AAAAAAAAAAAAAAAAAAAAAQ"
DIR_2 = "AAAAAAAAAAAAAAAAAAAAAg"


def config(tmp_path: Path, node_id: int = 1, roles: str = "controller", quorum: str = "") -> ServerConfig:
    quorum = quorum or "controller.quorum.bootstrap.servers: 127.0.0.1:19093,127.0.0.1:19094"
    path = tmp_path / f"node-{node_id}.yaml"
    listeners = "CONTROLLER://127.0.0.1:19093" if roles == "controller" else "PLAINTEXT://127.0.0.1:19092"
    path.write_text(textwrap.dedent(f"""\
        node.id: {node_id}
        process.roles: {roles}
        cluster.id: {CLUSTER}
        {quorum}
        listeners: {listeners}
        controller.listener.names: CONTROLLER
        log.dirs: {tmp_path / f'data-{node_id}'}
        """))
    return ServerConfig.load(path)


def test_initial_controllers_are_written_and_each_node_takes_its_directory_id(tmp_path: Path) -> None:
    text = f"1@127.0.0.1:19093:{DIR_1},2@[::1]:19094:{DIR_2}"
    for node_id in (1, 2):
        outcome = format_storage(config(tmp_path, node_id), initial_controllers=text)
        directory = tmp_path / f"data-{node_id}"
        voters = read_bootstrap_voters(directory)
        assert voters is not None and voters == outcome.voters and sorted(voters.ids) == [1, 2]
        assert voters.endpoint(2) == Endpoint("CONTROLLER", "::1", 19094)
        assert MetaProperties.read(directory).directory_id == (DIR_1, DIR_2)[node_id - 1]  # type: ignore[union-attr]
        assert read_bootstrap_checkpoint(directory) is not None  # the controller's records still read back


def test_standalone_is_this_controller_alone_with_a_new_directory(tmp_path: Path) -> None:
    outcome = format_storage(config(tmp_path), standalone=True)
    voters = read_bootstrap_voters(tmp_path / "data-1")
    assert voters is not None and list(voters.ids) == [1]
    assert voters.key_of(1).directory_id == outcome.directory_id  # type: ignore[union-attr]
    assert voters.endpoint(1) == Endpoint("CONTROLLER", "127.0.0.1", 19093)


def test_a_node_formatted_to_join_has_no_voters_but_a_directory_id(tmp_path: Path) -> None:
    outcome = format_storage(config(tmp_path))
    assert read_bootstrap_voters(tmp_path / "data-1") is None
    assert outcome.directory_id is not None and len(uuid_bytes(outcome.directory_id)) == 16


@pytest.mark.parametrize("text, words", [
    ("1@127.0.0.1:19093", "is not"),
    (f"1@127.0.0.1:{DIR_1}", "HOST:PORT"),
    (f"x@127.0.0.1:19093:{DIR_1}", "ID@HOST:PORT:DIRECTORY_ID"),
    (f"-1@127.0.0.1:19093:{DIR_1}", "ID@HOST:PORT:DIRECTORY_ID"),
    ("1@127.0.0.1:19093:not-a-uuid", "UUID"),
    ("1@127.0.0.1:19093:AAAAAAAAAAAAAAAAAAAAAA", "zero UUID"),
    (f"1@127.0.0.1:0:{DIR_1}", "port"),
    (f"1@127.0.0.1:19093:{DIR_1},1@127.0.0.1:19094:{DIR_2}", "twice"),
])
def test_hostile_initial_controllers_are_refused(text: str, words: str) -> None:
    with pytest.raises(InvalidConfigError, match=words):
        parse_initial_controllers(text)


def test_formats_that_make_no_sense_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    text = f"1@127.0.0.1:19093:{DIR_1}"
    static = config(tmp_path, quorum="controller.quorum.voters: 1@127.0.0.1:19093")
    with pytest.raises(InvalidConfigError, match="static controller.quorum.voters"):
        format_storage(static, initial_controllers=text)
    with pytest.raises(InvalidConfigError, match="not both"):
        format_storage(config(tmp_path), initial_controllers=text, standalone=True)
    broker = config(tmp_path, node_id=5, roles="broker")
    with pytest.raises(InvalidConfigError, match="only a controller"):
        format_storage(broker, standalone=True)
    assert not (tmp_path / "data-1").exists() and not (tmp_path / "data-5").exists()


def test_a_directory_formatted_for_another_cluster_is_kept(tmp_path: Path) -> None:
    format_storage(config(tmp_path), standalone=True)
    before = (tmp_path / "data-1" / "meta.properties").read_text()
    other = config(tmp_path)
    (tmp_path / "node-1.yaml").write_text((tmp_path / "node-1.yaml").read_text().replace(CLUSTER, "T3RoZXJDbHVzdGVy"))
    other = ServerConfig.load(tmp_path / "node-1.yaml")
    with pytest.raises(Exception, match="cluster.id"):
        format_storage(other, standalone=True, ignore_formatted=True)
    assert (tmp_path / "data-1" / "meta.properties").read_text() == before


def test_random_uuid_prints_a_base64url_uuid(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.argv", ["kraftlog", "storage", "random-uuid"])
    try:
        main()
    except SystemExit as exited:
        assert exited.code in (0, None)
    printed = capsys.readouterr().out.strip()
    assert len(printed) == 22 and len(uuid_bytes(printed)) == 16
