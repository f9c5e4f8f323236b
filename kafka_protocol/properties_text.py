"""Java's .properties text, as Kafka's tools read it: a client's
`--command-config` / `--producer.config` / `--consumer.config` file and a
node's meta.properties.

Java's rules (java.util.Properties.load): blank lines and lines whose first
non-blank character is `#` or `!` are skipped; a line ending in an odd
number of backslashes continues on the next (its leading blanks dropped);
the key ends at the first unescaped `=`, `:` or blank, and one `=` or `:`
with blanks around it separates it from the value; `\\t \\n \\r \\f \\uXXXX`
are escapes and any other escaped character stands for itself. A key
without a value is the empty string, as in Java. The last of a repeated key
wins. Errors name the line number, never its text: these files hold
passwords (sasl.jaas.config, ssl.key.password).

`format_properties` writes the text back (what `parse_properties` reads
back to the same mapping), for a client file a tool hands to another.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Mapping

from .errors import InvalidConfigError

_BLANKS = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(text: str, source: str) -> dict[str, str]:
    """The key -> value mapping of `text`; `source` (a file name) starts any error message."""
    values: dict[str, str] = {}
    for number, line in _logical_lines(text):
        key, rest = _split_key(line)
        values[_unescape(key, source, number)] = _unescape(rest, source, number)
    return values


def read_properties(path: Path, source: str) -> dict[str, str]:
    """The key -> value mapping of the file at `path` (UTF-8); OSError if it cannot be read."""
    return parse_properties(Path(path).read_text("utf-8"), source)


def format_properties(values: Mapping[str, str]) -> str:
    """`key=value` lines, escaped so that parse_properties gives `values` back."""
    return "".join(f"{_escape(key, is_key=True)}={_escape(value, is_key=False)}\n" for key, value in values.items())


def _escape(text: str, *, is_key: bool) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch in "\t\n\r\f":
            out.append("\\" + "tnrf"["\t\n\r\f".index(ch)])
        elif (is_key and ch in "=: #!") or (i == 0 and ch in " #!"):  # a key's end, a comment, a dropped blank
            out.append("\\" + ch)
        elif not ch.isprintable():
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else ch)
        else:
            out.append(ch)
    return "".join(out)


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(number of the first physical line, the joined logical line) of each non-comment line."""
    pending, first = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip(_BLANKS)
        if not pending and (not line or line[0] in "#!"):
            continue
        if not pending:
            first = number
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:  # an odd run of backslashes: the line goes on
            pending += line[:-1]
            continue
        yield first, pending + line
        pending = ""
    if pending:
        yield first, pending


def _split_key(line: str) -> tuple[str, str]:
    """(escaped key, escaped value) of a logical line."""
    i = 0
    while i < len(line) and line[i] not in "=:" + _BLANKS:
        i += 2 if line[i] == "\\" else 1
    key, rest = line[:i], line[i:].lstrip(_BLANKS)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANKS)
    return key, rest


def _unescape(text: str, source: str, number: int) -> str:
    if "\\" not in text:
        return text
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 == len(text):
            out.append(ch)
            i += 1
            continue
        code = text[i + 1]
        if code == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise InvalidConfigError(f"{source}: line {number}: malformed \\uXXXX escape")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(code, code))
            i += 2
    return "".join(out)
