"""Java's .properties text as java.util.Properties.load reads it, and errors
that never quote a line (these files hold passwords)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_protocol.errors import InvalidConfigError
from kafka_protocol.properties_text import format_properties, parse_properties


def test_java_rules():
    text = ("# comment\n  ! other comment\n\n"
            "a=1\n"
            "b : two words \n"
            "c 3\n"
            "key\\ with\\=escapes = v\\tx\\u0041\\\\\n"
            "long = first, \\\n    second\n"
            "empty\n"
            "a=last wins\n"
            "jaas=org.Mod required username=\"u\" password=\"p=;#x\";\n")
    assert parse_properties(text, "f") == {
        "a": "last wins", "b": "two words ", "c": "3", "key with=escapes": "v\txA\\",
        "long": "first, second", "empty": "", "jaas": 'org.Mod required username="u" password="p=;#x";'}


def test_an_even_run_of_backslashes_ends_the_line():
    assert parse_properties("path=C:\\\\\nnext=1\n", "f") == {"path": "C:\\", "next": "1"}


@pytest.mark.parametrize("bad", ["sasl.password=hunter2\\u12", "sasl.password=hunter2\\uZZZZ"])
def test_a_malformed_escape_names_the_line_not_its_text(bad):
    with pytest.raises(InvalidConfigError) as caught:
        parse_properties(f"# first\n{bad}\n", "client.properties")
    assert "client.properties: line 2" in str(caught.value) and "hunter2" not in str(caught.value)


@given(st.dictionaries(st.text(max_size=12), st.text(max_size=20), max_size=6))
def test_format_is_read_back_as_written(values):
    assert parse_properties(format_properties(values), "f") == values


def test_format_escapes_what_would_end_a_key_or_start_a_comment():
    text = format_properties({"#a key=x": " p=;#\\", "sasl.username": "alice"})
    assert text == "\\#a\\ key\\=x=\\ p=;#\\\\\nsasl.username=alice\n"
