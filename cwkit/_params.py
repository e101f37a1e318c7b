"""Hyper-parameter constraints: each checks one value and says what is valid."""
import numbers
import sys

import numpy as np


class Real:
    """A real number in an interval; `open_lo`/`open_hi` exclude the ends."""

    def __init__(self, lo=-np.inf, hi=np.inf, open_lo=False, open_hi=False):
        self.lo, self.hi, self.open_lo, self.open_hi = lo, hi, open_lo, open_hi

    def describe(self):
        lb = "(" if self.open_lo else "["
        hb = ")" if self.open_hi else "]"
        return f"a real number in {lb}{self.lo:g}, {self.hi:g}{hb}"

    def check(self, value):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        v = float(value)
        if np.isnan(v):
            return False
        lo_ok = v > self.lo if self.open_lo else v >= self.lo
        hi_ok = v < self.hi if self.open_hi else v <= self.hi
        return lo_ok and hi_ok


class Optional:
    """`special` (None, or a string such as "auto"), with a documented meaning, or a value
    accepted by `inner`."""

    def __init__(self, inner, meaning, special=None):
        self.inner, self.meaning, self.special = inner, meaning, special

    def describe(self):
        return f"{self.special!r} ({self.meaning}) or {self.inner.describe()}"

    def check(self, value):
        if self.special is None:
            return value is None or self.inner.check(value)
        return (isinstance(value, str) and value == self.special) or self.inner.check(value)


#: The largest value of a C ``int`` (kernel degrees) and of a ``Py_ssize_t`` (counts,
#: sizes and round numbers in the compiled core).
INT_MAX = 2 ** 31 - 1
SSIZE_MAX = 2 ** 63 - 1

#: The largest ``hash_bits`` a model records: 2**30 columns (a model takes at most
#: 2**31 - 1 features).
MAX_HASH_BITS = 30


class Int:
    """An integer in [`lo`, `hi`]: `hi` is the largest value the compiled core holds (a
    ``Py_ssize_t``, ``SSIZE_MAX``, unless a C ``int``, ``INT_MAX``, is given), so that
    a count too large for it is refused here with that value, never overflows later."""

    def __init__(self, lo=0, hi=SSIZE_MAX):
        self.lo, self.hi = lo, hi

    def describe(self):
        return f"an integer in [{self.lo}, {self.hi}]"

    def check(self, value):
        return (isinstance(value, numbers.Integral) and not isinstance(value, bool)
                and self.lo <= value <= self.hi)


class Choice:
    def __init__(self, *options):
        self.options = options

    def describe(self):
        return "one of " + ", ".join(repr(o) for o in self.options)

    def check(self, value):
        return isinstance(value, (str, bool)) and value in self.options


class Bool(Choice):
    def __init__(self):
        super().__init__(True, False)

    def check(self, value):
        return isinstance(value, (bool, np.bool_))


class Seed:
    def describe(self):
        return "None, an integer >= 0 or a numpy.random.Generator"

    def check(self, value):
        # (a Generator exists only once numpy.random is imported: not imported for this)
        return (value is None
                or (isinstance(value, numbers.Integral) and not isinstance(value, bool)
                    and value >= 0)
                or "numpy.random" in sys.modules and isinstance(value, np.random.Generator))


POSITIVE = Real(0.0, np.inf, open_lo=True, open_hi=True)
NONNEGATIVE = Real(0.0, np.inf, open_hi=True)


def validate(owner, constraints, values):
    """Raise ValueError naming the first parameter whose value is invalid."""
    for name, value in values.items():
        c = constraints.get(name)
        if c is not None and not c.check(value):
            raise ValueError(f"{owner}: invalid value {value!r} for parameter {name!r}; "
                             f"expected {c.describe()}")
