"""Java 17 ``Double.toString`` / ``Float.toString`` for whole columns of distinct values.

The exact port (:mod:`qbeast_connect.model.jdk17_format`) costs about 20 µs a value in
Python; Python's ``repr`` costs well under 1 µs. JDK 17 and ``repr`` choose the same digits
for most doubles, and the cases where they can differ are recognisable from the bits alone, so
each value takes the cheap path only when it is provably safe and the exact port otherwise.

Why the cheap path is exact. JDK 17 generates digits until the truncated or rounded-up
decimal lies within ``h`` of ``x`` and then picks the closer one; ``repr`` picks the closest
among the shortest decimals within the rounding interval. For a normal double that is not
an integer and not a power of two, ``h`` is exactly half an ulp on both sides (the two
intervals only differ at their end points), and the end points ``x ± h`` need more than 17
significant digits (their ulp is at most 1/2), so no candidate either algorithm looks at can
sit on them: both stop at the same length and choose the same decimal. Three things remain,
and each sends the value to the exact port:

* integers above ``2**53`` (below ``2**63`` the JDK rounds the exact integer to a digit count
  fixed by the exponent; from ``2**63`` the end points can be short decimals). Integers up
  to ``2**53`` are printed exactly by both;
* powers of two (the JDK uses the narrower lower gap on both sides);
* a one-digit result printed in scientific form (the JDK forces a second digit:
  ``4.9E-324``), subnormals, and values whose digit loop runs in Java ``int``/``long``
  arithmetic close enough to the overflow limit for the JDK's wrapping to matter.

Plain notation (``1e-3 <= |x| < 1e7``) is laid out by ``repr`` exactly as Java does
(``0.00123``, ``1234567.25``, ``100.0``); other magnitudes are re-laid-out in Java's
``d.dddE±n`` form.
"""

from __future__ import annotations

import numpy as np

from qbeast_connect.model.jdk17_format import (
    java_format,
    jdk17_double_to_string,
    jdk17_float_to_string,
)

__all__ = ["java_double_texts", "java_float_texts"]

# ceil(log2(5**i)) as the JDK approximates it, extended by its fallback ``3 * i``
_N5_TABLE = np.array(
    [0, 3, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28, 31, 33, 35, 38, 40, 42, 45, 47, 49, 52,
     54, 56, 59, 61],
    dtype=np.int64,
)


def _n5_bits(i: np.ndarray) -> np.ndarray:
    clipped = np.clip(i, 0, _N5_TABLE.size - 1)
    return np.where(i < _N5_TABLE.size, _N5_TABLE[clipped], 3 * i)


def _repr_safe(x: np.ndarray) -> np.ndarray:
    """Mask of values for which JDK 17 prints the digits of ``repr`` (see module docstring).

    A one-digit scientific result is not excluded here; the caller checks the digit count.
    """
    bits = x.view(np.uint64)
    biased = ((bits >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    mant = (bits & np.uint64((1 << 52) - 1)).astype(np.int64)
    normal = (biased != 0) & (biased != 0x7FF)
    with np.errstate(invalid="ignore"):
        integer = np.trunc(x) == x
    # integers up to 2**53: the JDK prints the exact integer, and so does repr
    exact_integer = normal & integer & (np.abs(x) <= 2.0**53)
    candidate = normal & ~integer & (mant != 0)
    # Which arithmetic the JDK's digit loop uses (BinaryToASCIIBuffer.dtoa): the bit
    # estimates Bbits and tenSbits of B and 10*S.
    bin_exp = biased - 1023
    fract = mant | (1 << 52)
    low_bit = fract & -fract
    tail_zeros = np.log2(low_bit.astype(np.float64)).astype(np.int64)
    n_fract_bits = 53 - tail_zeros
    n_tiny_bits = np.maximum(0, n_fract_bits - bin_exp - 1)
    d2 = ((np.int64(1023) << np.int64(52)) | mant).view(np.float64)
    d = (d2 - 1.5) * 0.289529654 + 0.176091259 + bin_exp.astype(np.float64) * 0.301029995663981
    dec_exp = np.floor(d).astype(np.int64)
    b5 = np.maximum(0, -dec_exp)
    b2 = b5 + n_tiny_bits + bin_exp
    s5 = np.maximum(0, dec_exp)
    s2 = s5 + n_tiny_bits
    m2 = b2 - 53
    b2 = b2 - (n_fract_bits - 1)
    common = np.minimum(b2, s2)
    b2 = b2 - common
    s2 = s2 - common
    m2 = m2 - common
    lift = np.where(m2 < 0, -m2, 0)
    b2 = b2 + lift
    s2 = s2 + lift
    b_bits = n_fract_bits + b2 + _n5_bits(b5)
    ten_s_bits = s2 + 1 + _n5_bits(s5 + 1)
    small = (b_bits < 64) & (ten_s_bits < 64)
    ints = (b_bits < 32) & (ten_s_bits < 32)
    # far enough from the overflow limit: 6 * 10*S stays below 2**31 (int) / 2**63 (long)
    risky = np.where(ints, ten_s_bits >= 29, small & (ten_s_bits >= 61))
    safe: np.ndarray = (candidate & ~risky) | exact_integer
    return safe


def _from_repr(text: str) -> str | None:
    """Java layout of a ``repr`` outside the plain range; None for a one-digit result."""
    negative = text.startswith("-")
    body = text[1:] if negative else text
    mantissa, _, exp_text = body.partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    all_digits = int_part + frac_part
    stripped = all_digits.lstrip("0")
    leading = len(all_digits) - len(stripped)
    digits = stripped.rstrip("0")
    if len(digits) < 2:
        return None
    return java_format(negative, digits, len(int_part) + exponent - leading)


def java_double_texts(values: np.ndarray) -> list[str]:
    """JDK 17 ``Double.toString`` of every value.

    Args:
        values: float64 values (best distinct: each is formatted once).

    Returns:
        One text per value, identical to
        :func:`~qbeast_connect.model.jdk17_format.jdk17_double_to_string`.
    """
    x = np.ascontiguousarray(values, dtype=np.float64)
    safe = _repr_safe(x)
    mag = np.abs(x)
    with np.errstate(invalid="ignore"):
        plain = (mag >= 1e-3) & (mag < 1e7)
        small_int = (np.trunc(x) == x) & (mag < 1e7)
    quick_plain = (safe & plain) | small_int
    if quick_plain.all():
        return list(map(repr, x.tolist()))
    out = np.empty(x.size, dtype=object)
    quick = np.flatnonzero(quick_plain)
    out[quick] = list(map(repr, x[quick].tolist()))
    rest = np.flatnonzero(~quick_plain)
    texts: list[str] = []
    append = texts.append
    for v, s in zip(x[rest].tolist(), safe[rest].tolist(), strict=True):
        text = _from_repr(repr(v)) if s else None
        append(jdk17_double_to_string(v) if text is None else text)
    out[rest] = texts
    result: list[str] = out.tolist()
    return result


def java_float_texts(values: np.ndarray) -> list[str]:
    """JDK 17 ``Float.toString`` of every value.

    Args:
        values: float32 values (best distinct).

    Returns:
        One text per value, identical to
        :func:`~qbeast_connect.model.jdk17_format.jdk17_float_to_string`.
    """
    with np.errstate(invalid="ignore"):
        x = np.ascontiguousarray(values, dtype=np.float32).astype(np.float64)
        small_int = (np.trunc(x) == x) & (np.abs(x) < 1e7)
    return [
        repr(v) if si else jdk17_float_to_string(v)
        for v, si in zip(x.tolist(), small_int.tolist(), strict=True)
    ]
