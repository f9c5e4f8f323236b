"""A client's settings with Kafka's names (a --command-config file's) as the
source's and sink's kraftlog.-prefixed options, read back by the source's own
parser; `kraftlog spark JOB --command-config FILE` refuses a bad file in one
line, before Spark starts, without the file's values. No SparkSession here."""
from __future__ import annotations

import subprocess
import sys

import pytest

from kafka_protocol.errors import InvalidConfigError
from security.listeners import SecurityProtocol
from spark_jobs.options import cluster_options, parse_read_options

PASSWORD = "options-Alice-Secret-1"
ALICE = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
         "sasl.password": PASSWORD, "ssl.truststore.location": "/certs/ca.pem"}


def test_security_settings_become_prefixed_options_the_source_reads_back():
    options = cluster_options("h1:9092,h2:9092", {**ALICE, "acks": "all", "bootstrap.servers": "elsewhere:1"})
    assert options == {"kraftlog.bootstrap.servers": "h1:9092,h2:9092",
                       **{f"kraftlog.{key}": value for key, value in ALICE.items()}}
    read = parse_read_options({**options, "subscribe": "events"}, streaming=False)
    assert read.bootstrap == "h1:9092,h2:9092" and read.security.protocol is SecurityProtocol.SASL_SSL
    assert PASSWORD not in repr(read) and PASSWORD not in repr(read.security)


def test_plaintext_is_the_bootstrap_alone():
    assert cluster_options("h1:9092") == cluster_options("h1:9092", {}) == {"kraftlog.bootstrap.servers": "h1:9092"}


def test_bad_settings_fail_before_a_query_without_their_values():
    with pytest.raises(InvalidConfigError, match="SCRAM-SHA-1 is not supported") as caught:
        cluster_options("h1:9092", {**ALICE, "sasl.mechanism": "SCRAM-SHA-1"})
    assert PASSWORD not in str(caught.value)


@pytest.mark.parametrize("content, error", [
    (f"security.protocol=SASL_SSL\nsasl.password={PASSWORD}\\u12\n", "line 2: malformed \\uXXXX escape"),
    ("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-1\nsasl.username=alice\n"
     f"sasl.password={PASSWORD}\n", "SCRAM-SHA-1 is not supported"),
    (None, "No such file")])
def test_a_bad_command_config_is_one_line(tmp_path, content, error):
    path = tmp_path / "client.properties"
    if content is not None:
        path.write_text(content)
    done = subprocess.run([sys.executable, "-m", "spark_jobs", "wordcount", "lines", "--table", "counts",
                           "--checkpoint", str(tmp_path / "checkpoint"), "--bootstrap", "127.0.0.1:1",
                           "--command-config", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr and PASSWORD not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("kraftlog spark: error: ") and error in lines[-1], done.stderr
