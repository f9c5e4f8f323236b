"""deploy/Dockerfile read as the builder reads it, for the tests that check the
image's instructions and start its entry point as a container would."""
from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "deploy" / "Dockerfile"


@dataclass(frozen=True)
class Image:
    instructions: tuple[tuple[str, str], ...]  # (INSTRUCTION, its arguments), continuation lines joined

    def all(self, name: str) -> list[str]:
        return [args for instruction, args in self.instructions if instruction == name]

    def last(self, name: str) -> str:
        return self.all(name)[-1]

    @property
    def env(self) -> dict[str, str]:
        """ENV KEY=VALUE ... (the only form used here)."""
        return dict(word.split("=", 1) for args in self.all("ENV") for word in shlex.split(args))

    @property
    def command(self) -> list[str]:
        """What `docker run IMAGE` runs: ENTRYPOINT then CMD, both in exec (JSON) form."""
        return json.loads(self.last("ENTRYPOINT")) + json.loads(self.last("CMD"))

    @property
    def healthcheck(self) -> list[str]:
        options, _, command = self.last("HEALTHCHECK").partition(" CMD ")
        return json.loads(command)


def read_image(path: Path = DOCKERFILE) -> Image:
    instructions = []
    pending = ""
    for line in path.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        pending += line.rstrip("\\").strip() + " " if line.endswith("\\") else line.strip()
        if not line.endswith("\\"):
            name, _, args = pending.partition(" ")
            instructions.append((name.upper(), args.strip()))
            pending = ""
    return Image(tuple(instructions))


def as_local_process(argv: list[str]) -> list[str]:
    """The image's `kraftlog` console script is this checkout's `python -m kraftlog`."""
    return [sys.executable, "-m", "kraftlog", *argv[1:]] if argv[:1] == ["kraftlog"] else argv
