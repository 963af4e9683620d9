"""A table's columns written as SQL DDL text, ``"id BIGINT, ts TIMESTAMP, name STRING"``.

``CREATE TABLE ... USING qbeast`` cannot take a column list (Spark never shows it to a
Python data source, see :mod:`server_plugin.catalog_tables`), so a new table's columns come
in the option ``schema``. This module reads that text into the Spark schema JSON a Delta
log stores, without a Spark session (the plugin parses it inside a Python worker).

Accepted: column names (plain or in backquotes), the atomic Spark types and their aliases,
``DECIMAL(p, s)``, ``CHAR(n)``/``VARCHAR(n)`` (stored as strings), ``NOT NULL`` and
``COMMENT '...'``. Nested types are refused with an error naming the alternative.
"""

from __future__ import annotations

import json
import re
from typing import Any

from qbeast_connect.exceptions import InvalidOptionError

__all__ = ["ddl_schema_json"]

_ATOMIC: dict[str, str] = {
    "boolean": "boolean",
    "bool": "boolean",
    "tinyint": "byte",
    "byte": "byte",
    "smallint": "short",
    "short": "short",
    "int": "integer",
    "integer": "integer",
    "bigint": "long",
    "long": "long",
    "float": "float",
    "real": "float",
    "double": "double",
    "string": "string",
    "binary": "binary",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ltz": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
}

_TOKEN = re.compile(
    r"\s*(?:(?P<quoted>`(?:[^`]|``)+`)"
    r"|(?P<string>'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.)*\")"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<number>\d+)|(?P<punct>[(),<>:]))"
)


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None:
            raise InvalidOptionError(
                f"option schema: cannot read {text[pos:].strip()[:40]!r} in {text!r}; write "
                "the columns as 'name TYPE, name TYPE', e.g. 'id BIGINT, ts TIMESTAMP'"
            )
        kind = match.lastgroup
        assert kind is not None
        out.append((kind, match.group(kind)))
        pos = match.end()
    return out


def _unquote(kind: str, value: str) -> str:
    if kind == "quoted":
        return value[1:-1].replace("``", "`")
    return value


def _type_json(tokens: list[tuple[str, str]], i: int, column: str) -> tuple[Any, int]:
    if i >= len(tokens) or tokens[i][0] != "word":
        raise InvalidOptionError(f"option schema: column {column!r} has no type")
    name = tokens[i][1].lower()
    i += 1
    if name in _ATOMIC:
        return _ATOMIC[name], i
    args: list[int] = []
    if i < len(tokens) and tokens[i] == ("punct", "("):
        i += 1
        while i < len(tokens) and tokens[i][0] == "number":
            args.append(int(tokens[i][1]))
            i += 1
            if i < len(tokens) and tokens[i] == ("punct", ","):
                i += 1
        if i >= len(tokens) or tokens[i] != ("punct", ")"):
            raise InvalidOptionError(f"option schema: unclosed '(' in the type of {column!r}")
        i += 1
    if name in ("decimal", "dec", "numeric") and len(args) <= 2:
        precision = args[0] if args else 10
        scale = args[1] if len(args) > 1 else 0
        if not 0 < precision <= 38 or not 0 <= scale <= precision:
            raise InvalidOptionError(
                f"option schema: DECIMAL({precision}, {scale}) of {column!r} is not a Spark "
                "decimal type (precision 1..38, scale 0..precision)"
            )
        return f"decimal({precision},{scale})", i
    if name in ("char", "varchar") and len(args) == 1:
        return "string", i
    if name in ("array", "map", "struct", "variant"):
        raise InvalidOptionError(
            f"option schema: column {column!r} has the nested type {name.upper()}, which "
            "CREATE TABLE ... USING qbeast cannot declare; write the table with "
            "df.write.format('qbeast') or qbeast_connect.write, then CREATE TABLE name "
            "USING qbeast LOCATION '<path>'"
        )
    raise InvalidOptionError(f"option schema: unknown type {tokens[i - 1][1]!r} of {column!r}")


def ddl_schema_json(text: str) -> str:
    """The Spark schema JSON of the columns in ``text`` (``"id BIGINT, x DOUBLE NOT NULL"``).

    Raises:
        InvalidOptionError: text that is not a column list of supported types, or a
            column named twice (names compare case-insensitively, as in Spark).
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidOptionError("option schema must list the columns, e.g. 'id BIGINT'")
    tokens = _tokens(text)
    fields: list[dict[str, Any]] = []
    seen: set[str] = set()
    i = 0
    while i < len(tokens):
        kind, value = tokens[i]
        if kind not in ("word", "quoted"):
            raise InvalidOptionError(f"option schema: expected a column name at {value!r}")
        column = _unquote(kind, value)
        if column.lower() in seen:
            raise InvalidOptionError(f"option schema: column {column!r} is named twice")
        seen.add(column.lower())
        data_type, i = _type_json(tokens, i + 1, column)
        nullable = True
        metadata: dict[str, Any] = {}
        while i < len(tokens) and tokens[i] != ("punct", ","):
            word = tokens[i][1].lower()
            if word == "not" and i + 1 < len(tokens) and tokens[i + 1][1].lower() == "null":
                nullable, i = False, i + 2
            elif word == "comment" and i + 1 < len(tokens) and tokens[i + 1][0] == "string":
                raw = tokens[i + 1][1][1:-1]
                metadata["comment"] = re.sub(r"\\(.)", r"\1", raw.replace("''", "'"))
                i += 2
            else:
                raise InvalidOptionError(
                    f"option schema: unexpected {tokens[i][1]!r} after column {column!r}"
                )
        fields.append(
            {"name": column, "type": data_type, "nullable": nullable, "metadata": metadata}
        )
        i += 1  # the comma
        if i == len(tokens) and tokens[-1] == ("punct", ","):
            raise InvalidOptionError(
                f"option schema: a column is missing after the last ',' in {text!r}"
            )
    return json.dumps({"type": "struct", "fields": fields})
