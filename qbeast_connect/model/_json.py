"""JSON text exactly as the reference's Jackson writes it (internal helpers).

Python's :mod:`json` differs from Jackson in three visible ways: it writes ``1e+16`` /
``10000000.0`` where Java writes ``1.0E16`` / ``1.0E7``, it escapes control characters with
lowercase hex, and it can write ``NaN``. :func:`dumps` renders compact JSON the Jackson way:

* ``float`` via Java ``Double.toString``; :class:`~qbeast_connect.model.hashing.Float32` via
  ``Float.toString``; NaN and infinities are refused;
* strings escape only ``"``, ``\\`` and control characters (``\\b \\t \\n \\f \\r`` or
  ``\\u00XX`` with uppercase hex); non-ASCII characters are written as they are;
* mappings keep their insertion order; no spaces.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.model.hashing import Float32, java_double_to_string, java_float_to_string

__all__ = ["dumps", "int_text", "jackson_tree_text", "loads"]

_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}
_ESCAPE_TABLE: dict[int, str] = {}
for _code in range(32):
    _ESCAPE_TABLE[_code] = f"\\u{_code:04X}"
for _ch, _esc in _SHORT_ESCAPES.items():
    _ESCAPE_TABLE[ord(_ch)] = _esc


def _string(s: str) -> str:
    return '"' + s.translate(_ESCAPE_TABLE) + '"'


def _write(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidOptionError(
                f"{value!r} cannot be written to Qbeast metadata: the reference reader rejects "
                "NaN and infinite numbers; remove them from the data or the statistics"
            )
        if isinstance(value, Float32):
            out.append(java_float_to_string(value))
        else:
            out.append(java_double_to_string(value))
    elif isinstance(value, Mapping):
        out.append("{")
        first = True
        for key, item in value.items():
            if not first:
                out.append(",")
            first = False
            out.append(_string(str(key)))
            out.append(":")
            _write(item, out)
        out.append("}")
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise InvalidOptionError(f"cannot write {type(value).__name__} value {value!r} as JSON")


def dumps(value: Any) -> str:
    """Render ``value`` as compact JSON, byte-identical to Jackson's output.

    Raises:
        InvalidOptionError: A float is NaN or infinite, or a value has no JSON form.
    """
    out: list[str] = []
    _write(value, out)
    return "".join(out)


def jackson_tree_text(obj: Any, *, type_property: str | None = "className") -> str:
    """Render a parsed JSON value like Jackson's ``JsonNode.toString()`` (spec §1.2, T27).

    This is the text the reference hashes to seed the null value of a legacy
    ``LinearTransformation`` without ``nullValue``. The polymorphic type property
    (``className``) of the top-level object has been consumed by Jackson and is dropped,
    wherever it appears; other keys, including unknown ones, keep their order. Integers keep
    their digits, floats are re-rendered with Java ``Double.toString`` (``1e1`` → ``10.0``).

    Args:
        obj: The object as parsed by :func:`loads` (floats for literals with ``.`` or an
            exponent, ints otherwise).
        type_property: Top-level key to drop; ``None`` keeps every key.

    Returns:
        The compact JSON text.
    """
    if type_property is not None and isinstance(obj, Mapping):
        obj = {k: v for k, v in obj.items() if k != type_property}
    return dumps(obj)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON number {name}")


def loads(text: str, *, what: str) -> Any:
    """Parse JSON text strictly (no NaN/Infinity), keeping int and float literals apart.

    Args:
        text: The JSON text.
        what: What the text is, for the error message (e.g. ``"revision JSON"``).

    Raises:
        MetadataFormatError: The text is not valid JSON.
    """
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, TypeError) as err:
        raise MetadataFormatError(f"cannot parse {what}: {err}; text: {text[:200]!r}") from None


def int_text(text: object, described: str) -> int:
    """Parse an integer the metadata stores as text (a file tag, a table property).

    Args:
        text: The stored value; surrounding blanks are ignored.
        described: Where it comes from and what it is, to begin the error message.

    Raises:
        MetadataFormatError: ``"<described>, which is not an integer"``.
    """
    try:
        return int(str(text).strip())
    except ValueError:
        raise MetadataFormatError(f"{described}, which is not an integer") from None
