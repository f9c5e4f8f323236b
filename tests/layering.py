"""The import-layering checker: the package table of docs/architecture.md against the code.

The table is the map a newcomer reads; this module reads it too, so the map and
the imports cannot drift apart. It is plain `ast` over the source files (no
imports are executed), so it needs no cluster and no optional dependency, and
it sees every import: at module level, inside functions (lazy imports), and
relative ones resolved to the package they name. Calls of
`importlib.import_module("pkg.mod")` / `__import__("pkg")` with a literal name
count as imports too.

"Ours" is every top-level directory with an `__init__.py`, plus `tests/`
(which holds test packages as well as loose modules). Imports of anything
else (the standard library, third-party packages) are not the table's
business.

The table (a Markdown table whose header has the columns `package` and
`may import`; an optional `only lazily` column):

    | package | ... | may import | only lazily |
    | `client/` | ... | `kafka_protocol`, `kraftlog_api` | |
    | `kraftlog/` | ... | `chaos`, `bench`, ... | `chaos`, `bench` |
    | `tests/` | ... | `*` | |

Only the backticked names in those two cells count; `*` means every package
of ours. A package always may import itself. A package named under
`only lazily` may be imported only inside a function, never while the
importer's module itself is being imported.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

ANY_PACKAGE = "*"
PACKAGE_COLUMN = "package"
MAY_IMPORT_COLUMN = "may import"
ONLY_LAZILY_COLUMN = "only lazily"
# Directories that hold code of ours without being packages themselves.
SCRIPT_DIRS = ("tests",)

_BACKTICKED = re.compile(r"`([^`]*)`")


class LayeringTableError(ValueError):
    """The architecture document has no package table this checker can read."""


@dataclass(frozen=True)
class Rule:
    """One row of the package table."""

    package: str
    may_import: frozenset[str]  # may contain ANY_PACKAGE
    only_lazily: frozenset[str]
    line: int  # of the row in the document

    def allows(self, package: str) -> bool:
        return package == self.package or ANY_PACKAGE in self.may_import or package in self.may_import


@dataclass(frozen=True)
class Import:
    """One import of a module of ours, found in a source file."""

    path: str  # relative to the repository root, with "/"
    line: int
    importer: str  # the top-level package the file belongs to
    module: str  # the dotted name imported
    lazy: bool  # inside a function: runs when called, not when the file is imported

    @property
    def package(self) -> str:
        return self.module.split(".")[0]

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


# -- the table -----------------------------------------------------------------------------

def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def _names(cell: str) -> frozenset[str]:
    return frozenset(name.strip().rstrip("/") for name in _BACKTICKED.findall(cell) if name.strip())


def parse_table(markdown: str) -> dict[str, Rule]:
    """The rules of the first Markdown table with `package` and `may import` columns."""
    lines = markdown.splitlines()
    for number, line in enumerate(lines):
        if not line.lstrip().startswith("|"):
            continue
        header = [cell.lower() for cell in _cells(line)]
        if PACKAGE_COLUMN not in header or MAY_IMPORT_COLUMN not in header:
            continue
        package_at = header.index(PACKAGE_COLUMN)
        may_import_at = header.index(MAY_IMPORT_COLUMN)
        lazily_at = header.index(ONLY_LAZILY_COLUMN) if ONLY_LAZILY_COLUMN in header else None
        rules: dict[str, Rule] = {}
        for row_number in range(number + 2, len(lines)):  # skip the |---| line
            row = lines[row_number]
            if not row.lstrip().startswith("|"):
                break
            cells = _cells(row)
            cells += [""] * (len(header) - len(cells))
            names = _names(cells[package_at])
            if len(names) != 1:
                raise LayeringTableError(f"line {row_number + 1}: the package cell must name one package in backticks")
            (package,) = names
            if package in rules:
                raise LayeringTableError(f"line {row_number + 1}: a second row for {package}")
            rules[package] = Rule(
                package=package,
                may_import=_names(cells[may_import_at]),
                only_lazily=_names(cells[lazily_at]) if lazily_at is not None else frozenset(),
                line=row_number + 1,
            )
        return rules
    raise LayeringTableError(f"no Markdown table with the columns {PACKAGE_COLUMN!r} and {MAY_IMPORT_COLUMN!r}")


# -- the code ------------------------------------------------------------------------------

def packages_of_ours(root: Path) -> set[str]:
    """Top-level directories with an __init__.py, and the script directories that exist."""
    found = {path.name for path in root.iterdir()
             if path.is_dir() and not path.name.startswith(".") and (path / "__init__.py").is_file()}
    found.update(name for name in SCRIPT_DIRS if (root / name).is_dir())
    return found


def source_files(root: Path, package: str) -> Iterable[Path]:
    for path in sorted((root / package).rglob("*.py")):
        if "__pycache__" not in path.parts:
            yield path


def _resolve_relative(path: Path, root: Path, module: str | None, level: int) -> str:
    """`from ..x import y` in a/b/c.py names a.x (the file's package, then up level-1)."""
    package = list(path.relative_to(root).parts[:-1])
    if level - 1 > len(package) - 1:  # the top-level package is as far up as it goes
        raise SyntaxError(f"{path.relative_to(root).as_posix()}: relative import beyond the top-level package")
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _literal_import_call(node: ast.Call) -> str | None:
    """The module named by importlib.import_module("m") or __import__("m"), if literal."""
    func = node.func
    named = (isinstance(func, ast.Name) and func.id in ("__import__", "import_module")) or (
        isinstance(func, ast.Attribute) and func.attr == "import_module")
    if not named or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str) and not first.value.startswith("."):
        return first.value
    return None


class _ImportFinder(ast.NodeVisitor):
    def __init__(self, path: Path, root: Path):
        self.path = path
        self.root = root
        self.function_depth = 0
        self.found: list[tuple[int, str, bool]] = []  # (line, module, lazy)

    def _function(self, node: ast.AST) -> None:
        self.function_depth += 1
        self.generic_visit(node)
        self.function_depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def _add(self, node: ast.AST, module: str) -> None:
        self.found.append((node.lineno, module, self.function_depth > 0))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self._add(node, _resolve_relative(self.path, self.root, node.module, node.level))
        else:
            self._add(node, node.module or "")

    def visit_Call(self, node: ast.Call) -> None:
        module = _literal_import_call(node)
        if module:
            self._add(node, module)
        self.generic_visit(node)


def find_imports(root: Path, packages: Iterable[str] | None = None) -> list[Import]:
    """Every import of a package of ours in the source files of `packages` (default: all of ours)."""
    ours = packages_of_ours(root)
    found: list[Import] = []
    for package in sorted(packages if packages is not None else ours):
        for path in source_files(root, package):
            finder = _ImportFinder(path, root)
            finder.visit(ast.parse(path.read_bytes(), filename=str(path)))
            relative = path.relative_to(root).as_posix()
            for line, module, lazy in finder.found:
                if module.split(".")[0] in ours:
                    found.append(Import(relative, line, package, module, lazy))
    return found


# -- the checks: each returns one message per problem, empty when all is well --------------

Exceptions = Mapping[tuple[str, str], str]  # (file path, imported package) -> the reason


def _excused(imp: Import, exceptions: Exceptions) -> bool:
    return (imp.path, imp.package) in exceptions


def forbidden_imports(imports: Iterable[Import], rules: Mapping[str, Rule], exceptions: Exceptions = {}) -> list[str]:
    """Imports the importer's row does not allow."""
    problems = []
    for imp in imports:
        rule = rules.get(imp.importer)
        if rule is None or rule.allows(imp.package) or _excused(imp, exceptions):
            continue  # a package without a row is missing_rows' finding
        allowed = ", ".join(sorted(rule.may_import)) or "no package of ours"
        problems.append(f"{imp.where}: {imp.importer} imports {imp.module}; "
                        f"{imp.importer} may import {allowed} (docs/architecture.md line {rule.line})")
    return problems


def eager_imports(imports: Iterable[Import], rules: Mapping[str, Rule], exceptions: Exceptions = {}) -> list[str]:
    """Module-level imports of a package the importer may reach only inside a function."""
    problems = []
    for imp in imports:
        rule = rules.get(imp.importer)
        if rule is None or imp.lazy or imp.package not in rule.only_lazily or _excused(imp, exceptions):
            continue
        problems.append(f"{imp.where}: {imp.importer} imports {imp.module} at module level; "
                        f"{imp.package} may be imported only inside a function (docs/architecture.md line {rule.line})")
    return problems


def package_cycles(imports: Iterable[Import]) -> list[str]:
    """Every loop among top-level packages, each edge shown with one import that makes it."""
    example: dict[tuple[str, str], Import] = {}
    for imp in imports:
        if imp.package != imp.importer:
            example.setdefault((imp.importer, imp.package), imp)
    graph: dict[str, set[str]] = {}
    for importer, imported in example:
        graph.setdefault(importer, set()).add(imported)
    problems = []
    for component in _strongly_connected(graph):
        if len(component) < 2:
            continue
        members = set(component)
        edges = sorted((a, b) for (a, b) in example if a in members and b in members)
        shown = "; ".join(f"{a} -> {b} ({example[a, b].where})" for a, b in edges)
        problems.append(f"package loop {' <-> '.join(sorted(members))}: {shown}")
    return problems


def _strongly_connected(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm; the graph has a dozen nodes, so recursion is fine."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for neighbour in sorted(graph.get(node, ())):
            if neighbour not in index:
                visit(neighbour)
                low[node] = min(low[node], low[neighbour])
            elif neighbour in on_stack:
                low[node] = min(low[node], index[neighbour])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def missing_rows(ours: Iterable[str], rules: Mapping[str, Rule]) -> list[str]:
    """Packages of ours the table does not describe: a new package must be put on the map."""
    return [f"{package}/ is a package of ours without a row in docs/architecture.md's package table"
            for package in sorted(set(ours) - set(rules))]


def unknown_names(ours: Iterable[str], rules: Mapping[str, Rule]) -> list[str]:
    """Rows, and names in `may import`/`only lazily`, for packages that do not exist."""
    ours = set(ours)
    problems = [f"docs/architecture.md line {rule.line}: a row for {package}/, which does not exist"
                for package, rule in sorted(rules.items()) if package not in ours]
    for package, rule in sorted(rules.items()):
        for name in sorted((rule.may_import | rule.only_lazily) - ours - {ANY_PACKAGE}):
            problems.append(f"docs/architecture.md line {rule.line}: {package} names {name}, which does not exist")
        for name in sorted(rule.only_lazily - rule.may_import - {ANY_PACKAGE}):
            if ANY_PACKAGE not in rule.may_import:
                problems.append(f"docs/architecture.md line {rule.line}: {package} lists {name} under "
                                f"'only lazily' but not under 'may import'")
    return problems


def table_cycles(rules: Mapping[str, Rule]) -> list[str]:
    """The table itself must be layered: no two rows may allow each other, even through others."""
    graph = {package: {name for name in rule.may_import if name in rules and name != package}
             for package, rule in rules.items() if ANY_PACKAGE not in rule.may_import}
    return [f"the table allows a loop: {' <-> '.join(component)}"
            for component in _strongly_connected(graph) if len(component) > 1]


def rows_out_of_order(rules: Mapping[str, Rule]) -> list[str]:
    """Lowest first: a row may allow only packages whose rows stand above it."""
    problems = []
    for package, rule in rules.items():
        for name in sorted(rule.may_import):
            if name in rules and rules[name].line > rule.line:
                problems.append(f"docs/architecture.md line {rule.line}: {package} may import {name}, "
                                f"whose row (line {rules[name].line}) comes after it; the table goes lowest first")
    return problems


def stale_exceptions(imports: Iterable[Import], rules: Mapping[str, Rule], exceptions: Exceptions) -> list[str]:
    """Exceptions without a reason, or that no longer excuse anything."""
    needed = {(imp.path, imp.package) for imp in imports
              if imp.importer in rules and (not rules[imp.importer].allows(imp.package)
                                             or (not imp.lazy and imp.package in rules[imp.importer].only_lazily))}
    problems = []
    for key, reason in sorted(exceptions.items()):
        if not reason or not reason.strip():
            problems.append(f"exception {key} has no reason")
        if key not in needed:
            problems.append(f"exception {key} excuses no import any more: remove it")
    return problems
