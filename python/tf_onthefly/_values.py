"""What a Python value means for a generator's integer or float argument, for every front end
(TensorFlow's _args.py, and the JAX and PyTorch front ends, which import no TensorFlow): one
rule each, refusing through the caller's `refuse(arg, message)` what a value cannot mean.
Seeds and steps are 64-bit words (docs/counter-contract.md)."""

import math
import numbers

import numpy as np

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MAX = 2**31 - 1
UINT64_MAX = 2**64 - 1


def refuse_value_error(arg: str, message: str):
    """The front ends' refusal: a ValueError naming the argument."""
    raise ValueError(f"{arg} {message}")


def is_integer(value) -> bool:
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def int_value(value, arg: str, *, unsigned_64: bool = False, refuse=refuse_value_error) -> int:
    """A Python integer for an int64 attribute or input element. With `unsigned_64` (seeds,
    steps), [2^63, 2^64) is accepted too and passed as the int64 with the same bits. Floats
    are refused, never truncated."""
    if not is_integer(value):
        refuse(arg, f"must be an integer, got {value!r} ({type(value).__name__})")
    v = int(value)
    top = UINT64_MAX if unsigned_64 else INT64_MAX
    if not INT64_MIN <= v <= top:
        refuse(arg, f"must be in [-2**63, {'2**64' if unsigned_64 else '2**63'}), got {v}")
    return v - 2**64 if v > INT64_MAX else v


def float_value(value, arg: str, *, refuse=refuse_value_error) -> float:
    """A Python float for a float attribute (stored as float32). NaN and infinities pass
    through for the op to judge and name; a finite value float32 cannot hold (overflow, or
    a non-zero value that rounds to zero) is refused rather than changed."""
    if not isinstance(value, (numbers.Real, np.floating, np.integer)) or isinstance(value, (bool, np.bool_)):
        refuse(arg, f"must be a real number, got {value!r} ({type(value).__name__})")
    v = float(value)
    if math.isfinite(v):
        with np.errstate(over="ignore"):
            f32 = np.float32(v)
        if not np.isfinite(f32):
            refuse(arg, f"must fit in float32 (|value| <= 3.4028235e38), got {v!r}")
        if v != 0 and f32 == 0:
            refuse(arg, f"must be 0 or at least 1.4e-45 in magnitude (float32 rounds {v!r} to 0)")
    return v
