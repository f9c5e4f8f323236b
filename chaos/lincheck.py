"""Running the Go linearizability checker (`chaos/checker`) as a subprocess.

The checker is built from the project's sources on first use (and again when
a source file is newer than the binary), so a fresh checkout needs only Go.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

CHECKER_DIR = Path(__file__).resolve().parent / "checker"
BINARY = CHECKER_DIR / "bin" / "lincheck"

OK, ILLEGAL, UNKNOWN, UNREADABLE = 0, 1, 2, 3
ILLEGAL_RESULT = "illegal"  # the verdict JSON's "result" for a history that is not linearizable
FORMATS = {"history": "jsonl", "jepsen-etcd": "jepsen-etcd"}


class CheckerUnavailable(RuntimeError):
    """The checker cannot be built or run here (no Go toolchain, build failure)."""


@dataclass(frozen=True)
class Verdict:
    exit_code: int
    result: dict | None  # the verdict JSON, None when the input was unreadable
    stderr: str


def ensure_built() -> Path:
    sources = list(CHECKER_DIR.rglob("*.go"))
    if BINARY.exists() and all(s.stat().st_mtime <= BINARY.stat().st_mtime for s in sources):
        return BINARY
    go = shutil.which("go")
    if go is None:
        raise CheckerUnavailable("the checker needs Go to build: run `make lincheck` (installs golang-go)")
    done = subprocess.run([go, "build", "-o", str(BINARY), "./cmd/lincheck"], cwd=CHECKER_DIR,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise CheckerUnavailable(f"building the checker failed: {done.stderr.strip()}")
    return BINARY


def check(history: Path | str, *, model: str, fmt: str = "history", time_limit: float = 10.0,
          html: Path | None = None) -> Verdict:
    """Check a history file ('-' for stdin is not supported here: pass a path)."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    args = [str(ensure_built()), "--model", model, "--format", FORMATS[fmt], "--time-limit", str(time_limit)]
    if html is not None:
        args += ["--html", str(html)]
    args.append(str(history))
    # the checker answers "unknown" by itself at the time limit; the margin covers start-up
    done = subprocess.run(args, capture_output=True, text=True, timeout=time_limit + 60)
    result = json.loads(done.stdout) if done.returncode in (OK, ILLEGAL, UNKNOWN) and done.stdout.strip() else None
    return Verdict(done.returncode, result, done.stderr)
