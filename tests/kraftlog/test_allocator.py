"""kraftlog_server/allocator.py in fresh Python processes: with the server's
thresholds, megabyte buffers of several sizes made and freed again and again
reuse the heap's pages, where glibc's dynamic thresholds fault many of them
in anew; an operator's GLIBC_TUNABLES malloc setting is left
alone."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

FAULTS = textwrap.dedent("""
    import json, os, resource, sys
    from kraftlog_server.allocator import tune_allocator
    tuned = tune_allocator() if sys.argv[1] == "tune" else None
    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    chunk = os.urandom(1 << 20)
    kept = []
    before = faults()
    for n in range(200):  # as a broker's fetch answers: 1-4 MiB made, sent, freed, small objects between
        answer = b"".join([chunk] * (1 + n % 4))
        kept.append(bytes(100))
        del answer
    print(json.dumps({"tuned": tuned, "faults": faults() - before}))
""")


def _run(mode: str, env_extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    env.update(env_extra or {})
    done = subprocess.run([sys.executable, "-c", FAULTS, mode], capture_output=True, text=True, env=env,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))), timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's (Linux)")
def test_tuned_thresholds_reuse_the_pages_of_megabyte_buffers() -> None:
    tuned = _run("tune")
    default = _run("default")
    assert tuned["tuned"] is True
    # glibc's dynamic thresholds trim the heap's top and map the largest buffers anew: about three
    # times the faults here (3,300 against 1,000 pages on this machine's glibc).
    assert tuned["faults"] * 2 < default["faults"], (tuned, default)


def test_an_operators_glibc_tunables_win() -> None:
    left = _run("tune", {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1048576"})
    assert left["tuned"] is False
