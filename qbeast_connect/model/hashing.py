"""Scalar reference implementations of the JVM hash functions and number formatting.

Two different hash functions matter for the Qbeast format (spec §3):

* :func:`spark_hash` is Spark SQL's ``hash()`` (Murmur3 with Spark's sign-extended byte
  tail, seed 42). It gives the **row weight**.
* :func:`scala_bytes_hash` is Scala 2.12 ``MurmurHash3.bytesHash``: one mix per byte, seed
  ``0x3c074a61``. It is **not** standard Murmur3 and gives the coordinate of a ``hashing``
  column. It hashes the Java ``toString`` of the value, hence the Java formatting helpers
  (:func:`java_double_to_string`, :func:`java_float_to_string`,
  :func:`java_decimal_to_string`).

:func:`scala_string_hash` and :class:`JavaRandom` are only needed for the deterministic null
value of legacy ``LinearTransformation`` JSON (spec §1.2).

Everything here is plain Python, meant as the executable reference for vectorized code.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import struct
from collections.abc import Sequence
from decimal import Decimal

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.jdk17_format import jdk17_double_to_string, jdk17_float_to_string

__all__ = [
    "Float32",
    "JavaRandom",
    "java_decimal_to_string",
    "java_double_to_string",
    "java_float_to_string",
    "scala_bytes_hash",
    "scala_string_hash",
    "spark_hash",
    "spark_hash_bytes",
    "spark_hash_int",
    "spark_hash_long",
    "to_float32",
    "unscaled_decimal",
]

_M32 = 0xFFFFFFFF
_M48 = (1 << 48) - 1
_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_SPARK_SEED = 42
_SCALA_BYTES_SEED = 0x3C074A61
_SCALA_STRING_SEED = 0xF7CA7FD2
_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH_DATETIME = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_ONE_MICRO = _dt.timedelta(microseconds=1)


class Float32(float):
    """A float known to be a Java ``float`` (float32) value.

    Its only effect is on text rendering: JSON writers and the hashing transformation render it
    with :func:`java_float_to_string` instead of :func:`java_double_to_string`. Build it with
    :func:`to_float32` so that the value is exactly representable in float32.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        """Return the Java ``Float.toString`` text."""
        return java_float_to_string(self)


def to_float32(x: float) -> Float32:
    """Round a double to the nearest float32 (Java ``(float) x``), tagged as :class:`Float32`.

    Args:
        x: A finite double within the float32 range (or an infinity or NaN).

    Returns:
        The rounded value.

    Raises:
        InvalidOptionError: ``x`` is finite but beyond the float32 range.
    """
    try:
        return Float32(struct.unpack("<f", struct.pack("<f", x))[0])
    except OverflowError:
        raise InvalidOptionError(
            f"{x!r} is out of the range of a float column (±3.4028235E38); "
            "use a double column for larger values"
        ) from None


# ---------------------------------------------------------------------------------------------
# Murmur3 primitives (all arithmetic mod 2**32)
# ---------------------------------------------------------------------------------------------


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _mix_k1(k: int) -> int:
    k = (k * _C1) & _M32
    k = _rotl32(k, 15)
    return (k * _C2) & _M32


def _mix_h1(h: int, k: int) -> int:
    h ^= _mix_k1(k)
    h = _rotl32(h, 13)
    return (h * 5 + 0xE6546B64) & _M32


def _avalanche(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h


def _fmix(h: int, length: int) -> int:
    return _avalanche(h ^ (length & _M32))


def _signed32(x: int) -> int:
    x &= _M32
    return x - (1 << 32) if x & 0x80000000 else x


def spark_hash_int(value: int, seed: int) -> int:
    """Spark ``Murmur3_x86_32.hashInt``.

    Args:
        value: An int32 (taken modulo 2**32).
        seed: The running hash (signed or unsigned int32).

    Returns:
        The hash as a signed int32.
    """
    return _signed32(_fmix(_mix_h1(seed & _M32, value & _M32), 4))


def spark_hash_long(value: int, seed: int) -> int:
    """Spark ``Murmur3_x86_32.hashLong`` (low word first, then high word).

    Args:
        value: An int64 (taken modulo 2**64).
        seed: The running hash.

    Returns:
        The hash as a signed int32.
    """
    low = value & _M32
    high = (value >> 32) & _M32
    h = _mix_h1(seed & _M32, low)
    h = _mix_h1(h, high)
    return _signed32(_fmix(h, 8))


def spark_hash_bytes(data: bytes, seed: int) -> int:
    """Spark ``Murmur3_x86_32.hashUnsafeBytes``: 4-byte words, then one mix per tail byte.

    The tail bytes are sign-extended and each mixed as a full word, which is **not** the
    standard Murmur3 tail (``mmh3`` agrees only when ``len(data) % 4 == 0``).

    Args:
        data: The bytes to hash.
        seed: The running hash.

    Returns:
        The hash as a signed int32.
    """
    h = seed & _M32
    n = len(data)
    aligned = n - n % 4
    for (word,) in struct.iter_unpack("<I", data[:aligned]):
        h = _mix_h1(h, word)
    for b in data[aligned:]:
        h = _mix_h1(h, (b - 256 if b > 127 else b) & _M32)
    return _signed32(_fmix(h, n))


# ---------------------------------------------------------------------------------------------
# Spark SQL hash()
# ---------------------------------------------------------------------------------------------

_DECIMAL_TYPE_RE = re.compile(r"^decimal\s*(?:\(\s*(\d+)\s*,\s*(\d+)\s*\))?$")
_INT_TYPES = frozenset({"integer", "int", "short", "smallint", "byte", "tinyint"})
_LONG_TYPES = frozenset({"long", "bigint"})
_TIMESTAMP_TYPES = frozenset({"timestamp", "timestamp_ntz", "timestamp_ltz"})


def _double_bits(x: float) -> int:
    if math.isnan(x):
        return 0x7FF8000000000000
    if x == 0.0:
        x = 0.0  # -0.0 hashes like 0.0
    return int(struct.unpack("<q", struct.pack("<d", x))[0])


def _float_bits(x: float) -> int:
    if math.isnan(x):
        return 0x7FC00000
    if x == 0.0:
        x = 0.0
    try:
        return int(struct.unpack("<i", struct.pack("<f", x))[0])
    except OverflowError:
        raise InvalidOptionError(
            f"{x!r} is out of the range of a float column (±3.4028235E38)"
        ) from None


def _epoch_micros(value: _dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.UTC)
    return (value - _EPOCH_DATETIME) // _ONE_MICRO


def _epoch_days(value: _dt.date) -> int:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.UTC)
        value = value.date()
    return (value - _EPOCH_DATE).days


def unscaled_decimal(value: Decimal | int | float | str, scale: int) -> int:
    """Return the unscaled integer of ``value`` at ``scale`` (Java ``BigDecimal.setScale``).

    Digits beyond ``scale`` are rounded half-up, as Spark does when it casts to a decimal type.

    Args:
        value: A decimal number (an int, float or str is first converted with ``Decimal``).
        scale: The number of digits after the point (may be negative).

    Returns:
        ``round_half_up(value * 10**scale)`` as an exact int.

    Raises:
        InvalidOptionError: ``value`` is NaN or infinite.
    """
    d = (
        value
        if isinstance(value, Decimal)
        else Decimal(str(value) if isinstance(value, float) else value)
    )
    if not d.is_finite():
        raise InvalidOptionError(
            f"decimal value {d} is not finite; only finite decimals are allowed"
        )
    sign, digits, exponent = d.as_tuple()
    assert isinstance(exponent, int)
    magnitude: int = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift >= 0:
        unscaled = magnitude * 10**shift
    else:
        divisor = 10**-shift
        unscaled, remainder = divmod(magnitude, divisor)
        if 2 * remainder >= divisor:
            unscaled += 1
    return int(-unscaled if sign else unscaled)


def _java_biginteger_bytes(n: int) -> bytes:
    bit_length = n.bit_length() if n >= 0 else (~n).bit_length()
    return n.to_bytes(bit_length // 8 + 1, "big", signed=True)


def _hash_one(value: object, spark_type: str, seed: int) -> int:
    t = spark_type.strip().lower()
    if t == "boolean":
        if not isinstance(value, bool | int):
            raise InvalidOptionError(f"a boolean value is expected, got {value!r}")
        return spark_hash_int(1 if value else 0, seed)
    if t in _INT_TYPES:
        if not isinstance(value, int):
            raise InvalidOptionError(
                f"an integer value is expected for {spark_type}, got {value!r}"
            )
        return spark_hash_int(value, seed)
    if t in _LONG_TYPES:
        if not isinstance(value, int):
            raise InvalidOptionError(
                f"an integer value is expected for {spark_type}, got {value!r}"
            )
        return spark_hash_long(value, seed)
    if t == "double":
        if not isinstance(value, int | float | Decimal):
            raise InvalidOptionError(f"a number is expected for double, got {value!r}")
        return spark_hash_long(_double_bits(float(value)), seed)
    if t in ("float", "real"):
        if not isinstance(value, int | float | Decimal):
            raise InvalidOptionError(f"a number is expected for float, got {value!r}")
        return spark_hash_int(_float_bits(float(value)), seed)
    if t == "string" or t.startswith(("varchar", "char")):
        if not isinstance(value, str):
            raise InvalidOptionError(f"a str value is expected for string, got {value!r}")
        return spark_hash_bytes(value.encode("utf-8", errors="replace"), seed)
    if t == "binary":
        if not isinstance(value, bytes | bytearray | memoryview):
            raise InvalidOptionError(f"a bytes value is expected for binary, got {value!r}")
        return spark_hash_bytes(bytes(value), seed)
    if t == "date":
        if isinstance(value, _dt.date):
            return spark_hash_int(_epoch_days(value), seed)
        if isinstance(value, int) and not isinstance(value, bool):
            return spark_hash_int(value, seed)  # already days since the epoch
        raise InvalidOptionError(
            f"a datetime.date (or days since epoch) is expected, got {value!r}"
        )
    if t in _TIMESTAMP_TYPES:
        if isinstance(value, _dt.datetime):
            return spark_hash_long(_epoch_micros(value), seed)
        if isinstance(value, int) and not isinstance(value, bool):
            return spark_hash_long(value, seed)  # already microseconds since the epoch
        raise InvalidOptionError(
            f"a datetime.datetime (or microseconds since epoch) is expected, got {value!r}"
        )
    match = _DECIMAL_TYPE_RE.match(t)
    if match is not None:
        precision = int(match.group(1)) if match.group(1) is not None else 10
        scale = int(match.group(2)) if match.group(2) is not None else 0
        if not isinstance(value, Decimal | int | float | str) or isinstance(value, bool):
            raise InvalidOptionError(
                f"a decimal.Decimal is expected for {spark_type}, got {value!r}"
            )
        unscaled = unscaled_decimal(value, scale)
        if abs(unscaled) >= 10**precision:
            raise InvalidOptionError(
                f"{value} does not fit {spark_type}: it needs more than {precision} digits"
            )
        if precision <= 18:
            return spark_hash_long(unscaled, seed)
        return spark_hash_bytes(_java_biginteger_bytes(unscaled), seed)
    raise InvalidOptionError(
        f"cannot hash Spark type {spark_type!r}; supported: boolean, byte, short, integer, long, "
        "float, double, string, binary, date, timestamp, decimal(p,s)"
    )


def spark_hash(values: Sequence[object], types: Sequence[str], seed: int = _SPARK_SEED) -> int:
    """Compute Spark SQL ``hash(c1, …, cn)`` of one row (the Qbeast row weight, spec §3.2).

    Nulls (``None``) leave the running hash unchanged, so ``hash(null) == 42``.

    Args:
        values: The column values. Accepted Python types per Spark type: ``int`` for
            boolean/byte/short/integer/long; ``bool`` for boolean; ``float`` for float/double;
            ``str`` for string; ``bytes`` for binary; ``datetime.date`` (or an int of days since
            the epoch) for date; ``datetime.datetime`` (tz-aware, or naive meaning UTC; or an int
            of microseconds since the epoch) for timestamp; ``decimal.Decimal`` for
            ``decimal(p,s)`` (rounded half-up to scale ``s``).
        types: Spark simple type names, one per value (``"integer"``, ``"long"``,
            ``"double"``, ``"decimal(10,2)"``, …; the SQL spellings ``int``, ``bigint`` etc.
            are accepted too).
        seed: Initial hash (Spark uses 42).

    Returns:
        The row hash as a signed int32.

    Raises:
        InvalidOptionError: The lengths differ, a type is unknown, or a value does not fit
            its type.
    """
    if len(values) != len(types):
        raise InvalidOptionError(
            f"spark_hash got {len(values)} values but {len(types)} types; pass one type per value"
        )
    h = _signed32(seed)
    for value, spark_type in zip(values, types, strict=True):
        if value is None:
            continue
        h = _hash_one(value, spark_type, h)
    return h


# ---------------------------------------------------------------------------------------------
# Scala MurmurHash3
# ---------------------------------------------------------------------------------------------


def scala_bytes_hash(data: bytes) -> int:
    """Scala 2.12 ``MurmurHash3.bytesHash(data)``: one mix per (sign-extended) byte.

    This is the hash of the ``hashing`` transformation. It differs from standard Murmur3
    (which is what Scala ≤ 2.12.8 and 2.13 use): ``scala_bytes_hash(b"qbeast") == 1791720291``.

    Args:
        data: The bytes to hash.

    Returns:
        The hash as a signed int32.
    """
    h = _SCALA_BYTES_SEED
    for b in data:
        h = _mix_h1(h, (b - 256 if b > 127 else b) & _M32)
    return _signed32(_fmix(h, len(data)))


def scala_string_hash(s: str) -> int:
    """Scala ``MurmurHash3.stringHash(s)`` over UTF-16 code units (spec §3.4).

    Args:
        s: Any string (characters beyond the BMP count as two code units).

    Returns:
        The hash as a signed int32.
    """
    encoded = s.encode("utf-16-le", errors="surrogatepass")
    units = struct.unpack(f"<{len(encoded) // 2}H", encoded)
    h = _SCALA_STRING_SEED
    n = len(units)
    i = 0
    while i + 1 < n:
        h = _mix_h1(h, ((units[i] << 16) + units[i + 1]) & _M32)
        i += 2
    if i < n:
        h ^= _mix_k1(units[i])
    return _signed32(_fmix(h, n))


class JavaRandom:
    """``java.util.Random``: the 48-bit linear congruential generator (spec §3.5).

    Args:
        seed: The seed (an int32 or int64; an int32 is sign-extended as in Java).

    Example:
        >>> JavaRandom(-398672889).next_double()
        0.7708405040306471
    """

    __slots__ = ("_state",)

    _MULTIPLIER = 0x5DEECE66D
    _ADDEND = 0xB

    def __init__(self, seed: int) -> None:
        self._state = (seed ^ self._MULTIPLIER) & _M48

    def _next(self, bits: int) -> int:
        self._state = (self._state * self._MULTIPLIER + self._ADDEND) & _M48
        value = self._state >> (48 - bits)
        # Java returns a signed int: only next(32) can have the sign bit set.
        if bits == 32 and value & 0x80000000:
            value -= 1 << 32
        return value

    def next_int(self) -> int:
        """Return the next int32, like ``Random.nextInt()``."""
        return self._next(32)

    def next_double(self) -> float:
        """Return the next double in [0, 1), like ``Random.nextDouble()``."""
        return ((self._next(26) << 27) + self._next(27)) * (1.0 / (1 << 53))


# ---------------------------------------------------------------------------------------------
# Java number formatting
# ---------------------------------------------------------------------------------------------


def java_double_to_string(x: float) -> str:
    """Render a double like Java 17 ``Double.toString`` (spec §3.3).

    The reference runs on JDK 17, whose digits are not always the shortest ones (see
    :mod:`qbeast_connect.model.jdk17_format`). Plain notation with at least one fractional
    digit when ``1e-3 <= |x| < 1e7``, otherwise ``d.dddE±n`` without a ``+`` sign: ``1.0``,
    ``0.001``, ``1.0E7``, ``1.0E-4``, ``-0.0``, ``NaN``, ``Infinity``,
    ``1.9999999999999998E23`` (``2e23``), ``4.9E-324``.

    Args:
        x: Any double.

    Returns:
        The Java text.
    """
    return jdk17_double_to_string(x)


def java_float_to_string(x: float) -> str:
    """Render a float32 value like Java 17 ``Float.toString``.

    ``x`` is first rounded to float32. Same layout rules as :func:`java_double_to_string`:
    ``2.5``, ``1.0E10``, ``0.1``, ``3.2590491E15``.

    Args:
        x: A double; it is rounded to the nearest float32 first.

    Returns:
        The Java text.
    """
    if math.isnan(x):
        return "NaN"
    f = float(to_float32(x)) if not math.isinf(x) else x
    return jdk17_float_to_string(f)


def java_decimal_to_string(d: Decimal, scale: int) -> str:
    """Render a decimal like Java ``BigDecimal.toString`` at the given scale.

    The value is first set to ``scale`` (rounded half-up). Plain notation when the scale is
    ≥ 0 and the adjusted exponent is ≥ -6 (``5.00`` for DECIMAL(10,2)), otherwise scientific
    with an explicit exponent sign (``1.0E-7`` for ``0.00000010`` at scale 8, ``1E+3`` at
    scale -3).

    Args:
        d: The value.
        scale: The column scale (digits after the point).

    Returns:
        The Java text.
    """
    unscaled = unscaled_decimal(d, scale)
    negative = unscaled < 0
    coefficient = str(-unscaled if negative else unscaled)
    sign = "-" if negative else ""
    adjusted = -scale + (len(coefficient) - 1)
    if scale >= 0 and adjusted >= -6:
        if scale == 0:
            return sign + coefficient
        if len(coefficient) > scale:
            return f"{sign}{coefficient[:-scale]}.{coefficient[-scale:]}"
        return f"{sign}0.{coefficient.rjust(scale, '0')}"
    mantissa = coefficient[0] + ("." + coefficient[1:] if len(coefficient) > 1 else "")
    exp_sign = "+" if adjusted > 0 else ""
    exp_text = f"E{exp_sign}{adjusted}" if adjusted != 0 else ""
    return f"{sign}{mantissa}{exp_text}"
