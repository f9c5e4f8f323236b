"""Regenerate the committed protobuf/gRPC modules in `kraftlog_api/` from `proto/`.

`make proto` runs this; tests/proto/test_generated_code.py runs it into a temp
directory and fails when the committed modules differ (stale). The
generator is grpcio-tools, pinned in pyproject's test extra so that the
output is the same on every machine.

    python proto/generate.py [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

PROTO_ROOT = Path(__file__).resolve().parent
REPO_ROOT = PROTO_ROOT.parent
PACKAGE = "kraftlog_api"


def proto_files() -> list[Path]:
    return sorted((PROTO_ROOT / PACKAGE).glob("*.proto"))


def generate(out_dir: Path) -> list[Path]:
    """Write `<out_dir>/kraftlog_api/*_pb2*.py(i)`; return the files written."""
    from grpc_tools import protoc  # a build tool: imported only when generating

    import grpc_tools

    out_dir.mkdir(parents=True, exist_ok=True)
    include = str(Path(grpc_tools.__file__).parent / "_proto")  # google/protobuf/*.proto
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *(str(p.relative_to(PROTO_ROOT)) for p in proto_files()),
    ]
    if protoc.main(args) != 0:
        raise RuntimeError("protoc failed: " + " ".join(args))
    return sorted(p for p in (out_dir / PACKAGE).iterdir() if p.name.endswith((".py", ".pyi")) and "_pb2" in p.name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT)
    args = parser.parse_args()
    for path in generate(args.out):
        print(path.relative_to(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
