"""Numbers that carry their own formula: the value is computed eagerly, the text is rendered on demand from the
same tree, so the formula a user audits can never disagree with the number beside it.

    kv = E(2, "K,V") * E(28, "layers") * E(4, "kv_heads") * E(128, "head_dim") * E(2, "bytes")
    kv.value       → 57344
    kv.symbolic()  → 2 × layers × kv_heads × head_dim × bytes
    kv.numbers()   → 2 × 28 × 4 × 128 × 2
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def _num(x: float) -> str:
    if isinstance(x, bool):
        return str(x)
    if float(x).is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    if abs(x) >= 1e5 or abs(x) < 1e-3:
        return f"{x:.4g}"
    return f"{x:,.4g}"


@dataclass(frozen=True, slots=True)
class E:
    """A value with a name (a leaf) or an operation over other E's (a node)."""

    value: float
    name: str = ""
    op: str = ""
    args: tuple = ()
    unit: str = ""
    """Display unit of a leaf (the value stays in base units): '6.41 GiB' reads better than 6.883e+09."""

    # --- building ---------------------------------------------------------------------------------------------
    def _bin(self, other, op: str, value: float) -> E:
        return E(value, "", op, (self, lift(other)))

    def __add__(self, o):
        return self._bin(o, "+", self.value + lift(o).value)

    def __sub__(self, o):
        return self._bin(o, "−", self.value - lift(o).value)

    def __mul__(self, o):
        return self._bin(o, "×", self.value * lift(o).value)

    def __truediv__(self, o):
        d = lift(o).value
        return self._bin(o, "/", self.value / d if d else math.inf)

    def __radd__(self, o):
        return lift(o) + self

    def __rmul__(self, o):
        return lift(o) * self

    def named(self, name: str, unit: str = "") -> E:
        """The same value, shown by `name` (and in `unit`) where it is used inside a larger formula."""
        return E(self.value, name, "=", (self,), unit)

    # --- rendering --------------------------------------------------------------------------------------------
    def symbolic(self) -> str:
        return self._render(lambda e: e.name or shown(e.value, e.unit), True)

    def numbers(self) -> str:
        return self._render(lambda e: shown(e.value, e.unit), True)

    def _render(self, leaf, top: bool) -> str:
        if self.op == "" or (self.op == "=" and not top):
            return leaf(self)
        if self.op == "=":
            return self.args[0]._render(leaf, True)
        if self.op in ("floor", "ceil"):
            return f"{self.op}({', '.join(a._render(leaf, True) for a in self.args)})"
        if self.op == "max0":
            return f"max(0, {self.args[0]._render(leaf, True)})"
        a, b = self.args
        return f"{a._side(leaf, self.op, False)} {self.op} {b._side(leaf, self.op, True)}"

    def _side(self, leaf, parent: str, right: bool) -> str:
        """An operand, parenthesised only where precedence needs it (a − (b − c), a / (b × c))."""
        text = self._render(leaf, False)
        mine, theirs = _PREC.get(self.op if self.op != "=" else "", 3), _PREC[parent]
        if mine < theirs or (mine == theirs and right and parent in ("−", "/")):
            return f"({text})"
        return text

    def text(self, unit: str = "") -> str:
        """'symbolic = numbers = value unit', the three lines a reviewer reads."""
        sym, nums, val = self.symbolic(), self.numbers(), shown(self.value, unit)
        parts = [sym] + [p for p in (nums, val) if p != sym]
        return "\n= ".join(dict.fromkeys(parts))


SCALE = {"GiB": 2**30, "MiB": 2**20, "KiB": 2**10, "GB/s": 1e9, "TB/s": 1e12, "TFLOP/s": 1e12, "GFLOP": 1e9,
         "ms": 1e-3, "µs": 1e-6}


def shown(value: float, unit: str = "") -> str:
    """A value in its display unit: shown(6.883e9, 'GiB') → '6.41 GiB'."""
    if not unit:
        return _num(value)
    v = value / SCALE.get(unit, 1)
    digits = f"{v:,.2f}" if unit in ("GiB", "MiB", "ms", "TB/s") and not float(v).is_integer() else _num(v)
    return f"{digits} {unit}"


_PREC = {"+": 1, "−": 1, "×": 2, "/": 2, "": 3}


def lift(x) -> E:
    return x if isinstance(x, E) else E(float(x))


def efloor(x) -> E:
    e = lift(x)
    return E(math.floor(e.value) if math.isfinite(e.value) else e.value, "", "floor", (e,))


def emax0(x) -> E:
    """max(0, x): a count that cannot go below none (the blocks of a pool the weights overrun)."""
    e = lift(x)
    return E(max(0.0, e.value) if math.isfinite(e.value) else e.value, "", "max0", (e,))


def eceil(x, rel_tol: float = 0.0) -> E:
    """⌈x⌉; with rel_tol, a quotient within rel_tol above an integer counts as that integer (a rate of exactly
    100 capacities is 100.00000000000001 of them in floating point)."""
    e = lift(x)
    v = e.value * (1 - rel_tol) if rel_tol and e.value > 0 else e.value
    return E(math.ceil(v) if math.isfinite(v) else e.value, "", "ceil", (e,))
