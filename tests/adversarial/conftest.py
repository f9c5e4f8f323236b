"""One cluster for the whole adversarial package (the tables and the fuzzer):
started once, every process killed by PID and its directory removed at the
end, also when a test failed."""
from __future__ import annotations

import shutil

import pytest

from .world import World


@pytest.fixture(scope="package")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("adversarial")
    world = World(root)
    try:
        world.start()
        yield world
    finally:
        world.close()
        shutil.rmtree(root, ignore_errors=True)
