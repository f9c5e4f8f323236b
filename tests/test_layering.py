"""The package table of docs/architecture.md is what the code imports.

Every import of a package of ours (at module level, inside functions, relative
ones resolved) must be allowed by the importer's row; there is no loop among
the top-level packages; every package has a row and every row is a package.
A failure names the file and line of the import, and the table's line.

The checker (tests/layering.py) is proven on small trees below: it must catch
a forbidden import, a loop, an eager import of a lazy-only package, a
package without a row and a row without a package.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from . import layering

REPO = Path(__file__).resolve().parents[1]
ARCHITECTURE = REPO / "docs" / "architecture.md"

# (file, imported package) -> why this import may break the table. Keep it empty:
# an entry here is a debt, and it fails once the import it excuses is gone.
EXCEPTIONS: dict[tuple[str, str], str] = {}

@pytest.fixture(scope="module")
def rules() -> dict[str, layering.Rule]:
    return layering.parse_table(ARCHITECTURE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def imports() -> list[layering.Import]:
    return layering.find_imports(REPO)


def _fail_on(problems: list[str]) -> None:
    if problems:
        pytest.fail(f"{len(problems)} problem(s):\n" + "\n".join(problems), pytrace=False)


# -- the repository ------------------------------------------------------------------------

def test_every_package_of_ours_has_a_row(rules):
    _fail_on(layering.missing_rows(layering.packages_of_ours(REPO), rules))


def test_every_row_names_a_package_that_exists(rules):
    _fail_on(layering.unknown_names(layering.packages_of_ours(REPO), rules))


def test_every_import_is_allowed_by_the_table(rules, imports):
    _fail_on(layering.forbidden_imports(imports, rules, EXCEPTIONS))


def test_lazy_only_packages_are_imported_inside_functions(rules, imports):
    _fail_on(layering.eager_imports(imports, rules, EXCEPTIONS))


def test_no_loop_among_the_packages(imports):
    _fail_on(layering.package_cycles(imports))


def test_the_table_itself_is_layered(rules):
    _fail_on(layering.table_cycles(rules) + layering.rows_out_of_order(rules))


def test_every_exception_has_a_reason_and_is_still_needed(rules, imports):
    _fail_on(layering.stale_exceptions(imports, rules, EXCEPTIONS))


# -- the checker, on trees made for the purpose --------------------------------------------

TABLE = """\
# map

| package | owns | may import | only lazily |
| --- | --- | --- | --- |
| `low/` | the bottom | — | |
| `mid/` | the middle, `low.x` | `low` | |
| `tools/` | tools | `low` | |
| `top/` | the top | `mid`, `low`, `tools` | `tools` |
| `tests/` | tests | `*` | |
"""


def make_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def layered_tree(root: Path, extra: dict[str, str] | None = None) -> Path:
    files = {
        "low/__init__.py": "",
        "low/x.py": "import os\n",
        "mid/__init__.py": "",
        "mid/a.py": "from low import x\nfrom . import b\nfrom .b import thing\n",
        "mid/b.py": "thing = 1\n",
        "top/__init__.py": "",
        "top/cli.py": "import mid.a\n\ndef run():\n    from tools import job\n",
        "tools/__init__.py": "",
        "tools/job.py": "import low.x\n",
        "tests/__init__.py": "",
        "tests/test_x.py": "import top.cli, tools.job, mid.a\n",
        "notpkg/script.py": "import top\n",  # no __init__.py: not ours, not checked
    }
    files.update(extra or {})
    return make_tree(root, files)


def check(root: Path, table: str = TABLE) -> list[str]:
    rules = layering.parse_table(table)
    imports = layering.find_imports(root)
    ours = layering.packages_of_ours(root)
    return (layering.forbidden_imports(imports, rules) + layering.eager_imports(imports, rules)
            + layering.package_cycles(imports) + layering.missing_rows(ours, rules)
            + layering.unknown_names(ours, rules) + layering.table_cycles(rules)
            + layering.rows_out_of_order(rules))


def test_checker_passes_a_layered_tree(tmp_path):
    assert check(layered_tree(tmp_path)) == []


def test_checker_reads_the_table():
    rules = layering.parse_table(TABLE)
    assert set(rules) == {"low", "mid", "top", "tools", "tests"}
    assert rules["low"].may_import == frozenset()
    assert rules["mid"].may_import == {"low"}  # `low.x` in another column does not count
    assert rules["top"].only_lazily == {"tools"}
    assert rules["tests"].allows("anything")
    assert rules["mid"].line == 6


def test_checker_catches_a_forbidden_import_inside_a_function(tmp_path):
    layered_tree(tmp_path, {"low/y.py": "def f():\n    import mid.b\n"})
    problems = check(tmp_path)
    assert any(p.startswith("low/y.py:2: low imports mid.b; low may import no package of ours") for p in problems)


def test_checker_catches_a_forbidden_literal_import_module(tmp_path):
    layered_tree(tmp_path, {"tools/plugin.py": "import importlib\nmod = importlib.import_module('top.cli')\n"})
    assert any(p.startswith("tools/plugin.py:2: tools imports top.cli") for p in check(tmp_path))


def test_checker_catches_a_loop_and_names_each_edge(tmp_path):
    layered_tree(tmp_path, {"low/y.py": "from mid import a\n"})
    loops = [p for p in check(tmp_path) if p.startswith("package loop")]
    assert loops == ["package loop low <-> mid: low -> mid (low/y.py:1); mid -> low (mid/a.py:1)"]


def test_checker_catches_a_loop_through_lazy_imports_too(tmp_path):
    layered_tree(tmp_path, {"tools/back.py": "def f():\n    import top.cli\n"})
    loops = [p for p in check(tmp_path) if p.startswith("package loop")]
    assert loops == ["package loop tools <-> top: tools -> top (tools/back.py:2); top -> tools (top/cli.py:4)"]


def test_checker_catches_a_module_level_import_of_a_lazy_only_package(tmp_path):
    layered_tree(tmp_path, {"top/eager.py": "from tools.job import *\n"})
    assert any(p.startswith("top/eager.py:1: top imports tools.job at module level") for p in check(tmp_path))


def test_checker_resolves_relative_imports(tmp_path):
    # a relative import never leaves its top-level package, so nothing is wrong here
    layered_tree(tmp_path, {"mid/sub/__init__.py": "", "mid/sub/c.py": "from .. import b\nfrom ..a import x\n"})
    imports = layering.find_imports(tmp_path, ["mid"])
    assert {(i.path, i.module) for i in imports if i.path.startswith("mid/sub/")} == {
        ("mid/sub/c.py", "mid"), ("mid/sub/c.py", "mid.a")}
    assert check(tmp_path) == []


def test_checker_refuses_a_relative_import_above_the_top_level(tmp_path):
    layered_tree(tmp_path, {"mid/bad.py": "from .. import low\n"})
    with pytest.raises(SyntaxError, match="beyond the top-level package"):
        layering.find_imports(tmp_path)


def test_checker_catches_a_package_without_a_row(tmp_path):
    layered_tree(tmp_path, {"extra/__init__.py": ""})
    assert "extra/ is a package of ours without a row in docs/architecture.md's package table" in check(tmp_path)


def test_checker_catches_a_row_without_a_package(tmp_path):
    layered_tree(tmp_path)
    table = TABLE + "| `gone/` | nothing | `low`, `ghost` | |\n"
    problems = check(tmp_path, table)
    assert "docs/architecture.md line 10: a row for gone/, which does not exist" in problems
    assert "docs/architecture.md line 10: gone names ghost, which does not exist" in problems


def test_checker_catches_a_loop_in_the_table(tmp_path):
    layered_tree(tmp_path)
    table = TABLE.replace("| `low/` | the bottom | — |", "| `low/` | the bottom | `tools` |")
    problems = check(tmp_path, table)
    assert "the table allows a loop: low <-> tools" in problems
    assert any(p.startswith("docs/architecture.md line 5: low may import tools, whose row (line 7) comes after it")
               for p in problems)


def test_checker_ignores_imports_of_other_code(tmp_path):
    layered_tree(tmp_path, {"low/z.py": "import json, yaml\nfrom notpkg import script\n"})
    assert check(tmp_path) == []


def test_an_exception_excuses_one_import_and_must_give_a_reason(tmp_path):
    layered_tree(tmp_path, {"low/y.py": "import mid.b\n"})
    rules = layering.parse_table(TABLE)
    imports = layering.find_imports(tmp_path)
    excused = {("low/y.py", "mid"): "the reason it cannot be otherwise, yet"}
    assert layering.forbidden_imports(imports, rules, excused) == []
    assert layering.stale_exceptions(imports, rules, excused) == []
    assert layering.stale_exceptions(imports, rules, {("low/y.py", "mid"): " "}) == [
        "exception ('low/y.py', 'mid') has no reason"]
    assert layering.stale_exceptions(imports, rules, {("mid/a.py", "low"): "allowed anyway"}) == [
        "exception ('mid/a.py', 'low') excuses no import any more: remove it"]


def test_a_document_without_the_table_is_an_error():
    with pytest.raises(layering.LayeringTableError):
        layering.parse_table("| folder | owns |\n| --- | --- |\n| `x/` | y |\n")
