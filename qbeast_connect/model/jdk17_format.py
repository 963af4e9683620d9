"""Java 17's ``Double.toString`` and ``Float.toString``, digit for digit.

The ``hashing`` transformation of qbeast-spark hashes the Java text of a number, and the
reference runs on JDK 17. Before JDK 19 the JDK formats floating-point numbers with the
``FloatingDecimal`` algorithm, which is *not* the shortest-digits rule of Python's ``repr``:

* integer values below 2**63 are printed from their exact integer, rounded to a number of
  digits that depends only on the binary exponent (``2**62`` is ``4.6116860184273879E18``,
  not ``4.611686018427388E18``);
* other values generate digits until the rest is within half an ulp, with a symmetric
  interval even at powers of two, a strict lower bound, and (in the big-integer case) an
  inclusive upper bound;
* the scientific form always gets a second digit (``Double.MIN_VALUE`` is ``4.9E-324``);
* small operands are handled in Java ``int``/``long`` arithmetic, whose overflow changes the
  result for a few values.

This module follows that algorithm step by step (Python integers stand in for Java's, wrapped
to 32 or 64 bits exactly where Java wraps), so that the texts, and hence the hashes, are the
ones a JDK 17 JVM produces. ``tests/unit/model/data/jdk17_to_string.txt`` holds texts produced
by a JDK 17 JVM that the tests compare against.
"""

from __future__ import annotations

import math
import struct

__all__ = [
    "dtoa_digits",
    "java_format",
    "jdk17_double_to_string",
    "jdk17_float_to_string",
]

_EXP_SHIFT = 52
_FRACT_HOB = 1 << _EXP_SHIFT
_SIGNIF_MASK = _FRACT_HOB - 1
_MAX_SMALL_BIN_EXP = 62
_MIN_SMALL_BIN_EXP = -(63 // 3)

# approximately ceil(log2(5**i)), as in the JDK
_N_5_BITS = (
    0, 3, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28, 31, 33, 35, 38, 40, 42, 45, 47, 49, 52, 54,
    56, 59, 61,
)
_LONG_5_POW_LEN = 27
# insignificantDigitsForPow2(p) for p in range(64)
_INSIGNIFICANT_POW2 = (
    0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 8, 8, 8, 9,
    9, 9, 9, 10, 10, 10, 11, 11, 11, 12, 12, 12, 12, 13, 13, 13, 14, 14, 14, 15, 15, 15, 15, 16,
    16, 16, 17, 17, 17, 18, 18, 18, 19,
)


def _wrap(x: int, bits: int) -> int:
    """Two's-complement wrap of ``x`` to a Java int (32) or long (64)."""
    m = 1 << bits
    x &= m - 1
    return x - m if x >> (bits - 1) else x


def _jdiv(a: int, b: int) -> int:
    """Java integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _jrem(a: int, b: int) -> int:
    """Java ``%`` (the sign of the dividend)."""
    return a - _jdiv(a, b) * b


def _insignificant_pow2(p2: int) -> int:
    return _INSIGNIFICANT_POW2[p2] if 1 < p2 < len(_INSIGNIFICANT_POW2) else 0


def _estimate_dec_exp(fract_bits: int, bin_exp: int) -> int:
    """``floor(log10(value))`` estimated in double arithmetic, as the JDK does (may be 1 high)."""
    one_bits = (1023 << 52) | (fract_bits & _SIGNIF_MASK)
    d2: float = struct.unpack("<d", struct.pack("<q", one_bits))[0]
    d = (d2 - 1.5) * 0.289529654 + 0.176091259 + float(bin_exp) * 0.301029995663981
    return math.floor(d)


def _long_digits(lvalue: int, insignificant: int) -> tuple[str, int]:
    """``developLongDigits(0, lvalue, insignificant)``: (digits, decimal exponent)."""
    dec_exponent = 0
    if insignificant:
        pow10 = 10**insignificant
        residue = lvalue % pow10
        lvalue //= pow10
        dec_exponent += insignificant
        if residue >= pow10 >> 1:
            lvalue += 1
    text = str(lvalue)
    stripped = text.rstrip("0")
    # the JDK counts one exponent step per digit and per dropped trailing zero
    return stripped, dec_exponent + len(text)


def _roundup(digits: list[int], dec_exponent: int) -> tuple[list[int], int]:
    i = len(digits) - 1
    q = digits[i]
    if q == 9:
        while q == 9 and i > 0:
            digits[i] = 0
            i -= 1
            q = digits[i]
        if q == 9:  # carry out: a leading 1, the zeros stay
            digits[0] = 1
            return digits, dec_exponent + 1
    digits[i] = q + 1
    return digits, dec_exponent


def _first_digit(
    q: int, low: bool, high: bool, dec_exp: int, digits: list[int]
) -> tuple[int, bool, bool]:
    """The JDK's first digit ``q``: a 0 that does not round up only lowers the exponent.

    Java prints at least one digit after the point, so an E-form result (exponent outside
    ``[-3, 8)``) needs a second digit: ``low`` and ``high`` are then cleared to run the loop.
    Returns the exponent, ``low`` and ``high``.
    """
    if q == 0 and not high:
        dec_exp -= 1
    else:
        digits.append(q)
    if dec_exp < -3 or dec_exp >= 8:
        return dec_exp, False, False
    return dec_exp, low, high


def dtoa_digits(bin_exp: int, fract_bits: int, n_significant_bits: int) -> tuple[list[int], int]:
    """JDK 17 ``BinaryToASCIIBuffer.dtoa`` for a positive finite value.

    Args:
        bin_exp: The unbiased binary exponent of the leading bit.
        fract_bits: The 53-bit significand with its leading bit at bit 52.
        n_significant_bits: 53 for a normal double, 24 for a normal float (fewer for
            subnormals).

    Returns:
        ``(digits, dec_exponent)``: the value is ``0.d1d2... * 10**dec_exponent``. A "digit"
        is normally 0..9; the JDK's overflowing paths could in theory give other values,
        which are kept as they are.
    """
    tail_zeros = (fract_bits & -fract_bits).bit_length() - 1
    n_fract_bits = _EXP_SHIFT + 1 - tail_zeros
    n_tiny_bits = max(0, n_fract_bits - bin_exp - 1)
    if (
        _MIN_SMALL_BIN_EXP <= bin_exp <= _MAX_SMALL_BIN_EXP
        and n_tiny_bits < _LONG_5_POW_LEN
        and n_fract_bits + _N_5_BITS[n_tiny_bits] < 64
        and n_tiny_bits == 0
    ):
        insignificant = (
            _insignificant_pow2(bin_exp - n_significant_bits - 1)
            if bin_exp > n_significant_bits
            else 0
        )
        if bin_exp >= _EXP_SHIFT:
            lvalue = fract_bits << (bin_exp - _EXP_SHIFT)
        else:
            lvalue = fract_bits >> (_EXP_SHIFT - bin_exp)
        text, dec_exponent = _long_digits(lvalue, insignificant)
        return [int(c) for c in text], dec_exponent

    dec_exp = _estimate_dec_exp(fract_bits, bin_exp)
    b5 = max(0, -dec_exp)
    b2 = b5 + n_tiny_bits + bin_exp
    s5 = max(0, dec_exp)
    s2 = s5 + n_tiny_bits
    m5 = b5
    m2 = b2 - n_significant_bits
    fract_bits >>= tail_zeros
    b2 -= n_fract_bits - 1
    common2 = min(b2, s2)
    b2 -= common2
    s2 -= common2
    m2 -= common2
    if n_fract_bits == 1:
        m2 -= 1  # a power of two: the gap below is half as wide (used on both sides)
    if m2 < 0:
        b2 -= m2
        s2 -= m2
        m2 = 0
    b_bits = n_fract_bits + b2 + (_N_5_BITS[b5] if b5 < len(_N_5_BITS) else b5 * 3)
    ten_s_bits = s2 + 1 + (_N_5_BITS[s5 + 1] if s5 + 1 < len(_N_5_BITS) else (s5 + 1) * 3)
    digits: list[int] = []
    if b_bits < 64 and ten_s_bits < 64:
        width = 32 if (b_bits < 32 and ten_s_bits < 32) else 64
        b = _wrap(_wrap(_wrap(fract_bits, width) * 5**b5, width) << b2, width)
        s = _wrap(5**s5 << s2, width)
        m = _wrap(5**m5 << m2, width)
        tens = _wrap(s * 10, width)
        q = _jdiv(b, s)
        b = _wrap(10 * _jrem(b, s), width)
        m = _wrap(m * 10, width)
        low = b < m
        high = _wrap(b + m, width) > tens
        dec_exp, low, high = _first_digit(q, low, high, dec_exp, digits)
        while not low and not high:
            q = _jdiv(b, s)
            b = _wrap(10 * _jrem(b, s), width)
            m = _wrap(m * 10, width)
            if m > 0:
                low = b < m
                high = _wrap(b + m, width) > tens
            else:  # the JDK's guard against an overflowed m
                low = high = True
            digits.append(q)
        low_digit_difference = _wrap(_wrap(b << 1, width) - tens, width)
    else:
        # FDBigInteger arithmetic is exact; only the comparisons matter.
        big_s = 5**s5 << s2
        big_b = fract_bits * 5**b5 << b2
        big_m = 5 ** (m5 + 1) << (m2 + 1)
        ten_s = 5 ** (s5 + 1) << (s2 + 1)
        q, rem = divmod(big_b, big_s)
        big_b = rem * 10
        low = big_b < big_m
        high = big_b + big_m >= ten_s
        dec_exp, low, high = _first_digit(q, low, high, dec_exp, digits)
        while not low and not high:
            q, rem = divmod(big_b, big_s)
            big_b = rem * 10
            big_m *= 10
            low = big_b < big_m
            high = big_b + big_m >= ten_s
            digits.append(q)
        if high and low:
            twice = big_b << 1
            low_digit_difference = (twice > ten_s) - (twice < ten_s)
        else:
            low_digit_difference = 0
    dec_exponent = dec_exp + 1
    if high:
        if low:
            if low_digit_difference == 0:
                if digits[-1] & 1:
                    digits, dec_exponent = _roundup(digits, dec_exponent)
            elif low_digit_difference > 0:
                digits, dec_exponent = _roundup(digits, dec_exponent)
        else:
            digits, dec_exponent = _roundup(digits, dec_exponent)
    return digits, dec_exponent


def java_format(negative: bool, digits: str, dec_exponent: int) -> str:
    """``BinaryToASCIIBuffer.getChars``: lay out ``0.<digits> * 10**dec_exponent`` as Java does.

    Plain form for ``-3 < dec_exponent < 8`` (``1e-3 <= |x| < 1e7``), otherwise ``d.dddE±n``.
    Digits are printed as the JDK has them (trailing zeros included).
    """
    sign = "-" if negative else ""
    n = len(digits)
    if 0 < dec_exponent < 8:
        head = digits[:dec_exponent]
        if n < dec_exponent:
            return f"{sign}{head}{'0' * (dec_exponent - n)}.0"
        return f"{sign}{head}.{digits[dec_exponent:] or '0'}"
    if -3 < dec_exponent <= 0:
        return f"{sign}0.{'0' * -dec_exponent}{digits}"
    exponent = dec_exponent - 1
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _digits_text(digits: list[int]) -> str:
    return "".join(chr(48 + d) for d in digits)


def jdk17_double_to_string(x: float) -> str:
    """``Double.toString(x)`` exactly as JDK 17 (and every JDK before 19) prints it.

    Args:
        x: Any double.

    Returns:
        The Java text, e.g. ``1.0``, ``1.0E7``, ``4.9E-324``, ``1.9999999999999998E23``.
    """
    bits = struct.unpack("<Q", struct.pack("<d", x))[0]
    return _binary_to_string(bits, width=64, mantissa_bits=52, bias=1023)


def jdk17_float_to_string(x: float) -> str:
    """``Float.toString((float) x)`` exactly as JDK 17 prints it.

    Args:
        x: A double; it is first rounded to float32 (it must be within the float32 range or
            infinite).

    Returns:
        The Java text, e.g. ``2.5``, ``1.0E10``, ``3.2590491E15``, ``1.4E-45``.

    Raises:
        OverflowError: ``x`` is finite but beyond the float32 range.
    """
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    return _binary_to_string(bits, width=32, mantissa_bits=23, bias=127)


def _binary_to_string(bits: int, *, width: int, mantissa_bits: int, bias: int) -> str:
    """The JDK 17 text of an IEEE 754 binary64 or binary32 value given by its bits.

    ``FloatingDecimal``'s double and float paths differ only in these widths: the float
    significand is widened to the double's position before the shared digit generation.
    """
    negative = bool(bits >> (width - 1))
    fract_bits = bits & ((1 << mantissa_bits) - 1)
    exp_mask = (1 << (width - 1 - mantissa_bits)) - 1
    bin_exp = (bits >> mantissa_bits) & exp_mask
    if bin_exp == exp_mask:
        if fract_bits:
            return "NaN"
        return "-Infinity" if negative else "Infinity"
    if bin_exp == 0:
        if fract_bits == 0:
            return "-0.0" if negative else "0.0"
        leading_zeros = width - fract_bits.bit_length()
        shift = leading_zeros - (width - 1 - mantissa_bits)
        fract_bits <<= shift
        bin_exp = 1 - shift
        n_significant_bits = width - leading_zeros
    else:
        fract_bits |= 1 << mantissa_bits
        n_significant_bits = mantissa_bits + 1
    digits, dec_exponent = dtoa_digits(
        bin_exp - bias, fract_bits << (_EXP_SHIFT - mantissa_bits), n_significant_bits
    )
    return java_format(negative, _digits_text(digits), dec_exponent)
