"""The CLI against a secured cluster (SASL_SSL for users, mTLS between nodes,
ACLs on): `--command-config FILE` (and the console tools' --producer.config /
--consumer.config) carries a user's security.protocol, ssl.* and sasl.*
settings in Java properties text. With the file a command works as far as the
user's ACLs go; without it the same command is refused; no password ever
reaches the command's output."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from devcluster.local_cluster import LocalCluster
from security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

from ..security.secured_cluster import secured_cluster
from .test_cli_admin import run

TOPIC = "payments"
PASSWORDS = {"admin": "cli-Admin-Secret-1", "alice": "cli-Alice-Secret-2"}
ALICE_ACLS = [AclBinding(ResourceType.TOPIC, TOPIC, PatternType.LITERAL, "User:alice", "*", operation,
                         AclPermissionType.ALLOW) for operation in (AclOperation.READ, AclOperation.WRITE)]


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    with secured_cluster(tmp_path_factory.mktemp("cli-secured"), PASSWORDS, ALICE_ACLS) as c:
        yield c


def properties_file(cluster: LocalCluster, user: str, directory: Path) -> Path:
    """A user's client.properties as a Kafka operator writes it: admin's with sasl.jaas.config,
    alice's with confluent-kafka's sasl.username/sasl.password; comments and a continued line."""
    truststore = cluster.security.ssl.truststore_location
    if user == "admin":
        login = ("sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
                 f'    username="admin" password="{PASSWORDS["admin"]}";\n')
    else:
        login = f"sasl.username = {user}\nsasl.password : {PASSWORDS[user]}\n"
    path = directory / f"{user}.properties"
    path.write_text(f"# {user}'s client settings\n! Java's other comment mark\n\nsecurity.protocol=SASL_SSL\n"
                    f"sasl.mechanism=SCRAM-SHA-512\n{login}ssl.truststore.location={truststore}\n")
    return path


def kraftlog(cluster: LocalCluster, *args: str, stdin: str = ""):
    """The command against the SASL_SSL listener; no password in what it printed."""
    done = run(None, *args, stdin=stdin, bootstrap=cluster.client_bootstrap)
    assert "Traceback" not in done.stderr
    for password in PASSWORDS.values():
        assert password not in done.stdout + done.stderr
    return done


def succeeds(cluster: LocalCluster, *args: str, stdin: str = "") -> str:
    done = kraftlog(cluster, *args, stdin=stdin)
    assert done.returncode == 0, f"{args}: {done.stderr}"
    return done.stdout


def refused(cluster: LocalCluster, *args: str, error: str) -> None:
    done = kraftlog(cluster, *args)
    assert done.returncode != 0, done.stdout
    lines = done.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("kraftlog: error: ") and error in lines[-1], done.stderr


def test_topics_with_and_without_command_config(secured, tmp_path):
    admin, alice = properties_file(secured, "admin", tmp_path), properties_file(secured, "alice", tmp_path)
    out = succeeds(secured, "topics", "create", TOPIC, "--partitions", "2", "--command-config", str(admin))
    assert f"Created topic {TOPIC}" in out
    secured.wait_for_leaders(TOPIC)
    succeeds(secured, "topics", "create", "ledger", "--partitions", "1", "--command-config", str(admin))
    # Created once the controller committed it (as in Kafka); the broker that
    # answers the list may not have the record yet: wait for it, then list.
    secured.wait_for_leaders("ledger")
    assert {TOPIC, "ledger"} <= set(json.loads(succeeds(secured, "topics", "list", "--json",
                                                        "--command-config", str(admin))))
    # alice describes only what her ACLs name: Read and Write imply Describe on payments alone
    assert json.loads(succeeds(secured, "topics", "list", "--json", "--command-config", str(alice))) == [TOPIC]
    refused(secured, "topics", "create", "alices-own", "--command-config", str(alice),
            error="TOPIC_AUTHORIZATION_FAILED")
    # without the file: plaintext to a TLS listener never gets an answer
    refused(secured, "topics", "list", error="no broker answered Metadata")


def test_console_produce_and_consume_as_alice(secured, tmp_path):
    alice = properties_file(secured, "alice", tmp_path)
    secured.wait_for_leaders(TOPIC)
    lines = [f"k{i}:v{i}" for i in range(20)]
    succeeds(secured, "produce", TOPIC, "--key-separator", ":", "--producer.config", str(alice),
             stdin="\n".join(lines) + "\n")
    out = succeeds(secured, "consume", TOPIC, "--from-beginning", "--max-messages", "20", "--json",
                   "--command-config", str(alice))  # Kafka 4.1's name for --consumer.config
    assert sorted(f"{r['key']}:{r['value']}" for r in map(json.loads, out.splitlines())) == sorted(lines)
    refused(secured, "produce", TOPIC, "--producer.config", str(alice), "--producer-property",
            "sasl.password=wrong-password", error="SASL_AUTHENTICATION_FAILED")
    refused(secured, "consume", TOPIC, "--from-beginning", "--max-messages", "1",
            "--consumer-property", "default.api.timeout.ms=3000", error="UNAVAILABLE")  # plaintext, no file


def test_acls_list_needs_a_user_allowed_to_describe_the_cluster(secured, tmp_path):
    admin, alice = properties_file(secured, "admin", tmp_path), properties_file(secured, "alice", tmp_path)
    listed = json.loads(succeeds(secured, "acls", "--list", "--json", "--topic", TOPIC, "--command-config", str(admin)))
    assert {(acl["principal"], acl["operation"]) for acl in listed} >= {("User:alice", "READ"), ("User:alice", "WRITE")}
    refused(secured, "acls", "--list", "--command-config", str(alice), error="CLUSTER_AUTHORIZATION_FAILED")


def test_a_bad_file_is_one_line_without_its_text(secured, tmp_path):
    bad = tmp_path / "bad.properties"
    bad.write_text(f"security.protocol=SASL_SSL\nsasl.password={PASSWORDS['alice']}\\u12\n")
    refused(secured, "topics", "list", "--command-config", str(bad), error="line 2: malformed \\uXXXX escape")
    refused(secured, "topics", "list", "--command-config", str(tmp_path / "missing.properties"),
            error="No such file")
