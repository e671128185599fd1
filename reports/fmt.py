"""Every number a report prints, formatted in one place.

`None` is how results say "no finite value": a percentile that landed on a
request never answered, or a figure that does not apply. Each formatter says
what it prints for it.
"""

from __future__ import annotations

__all__ = ["fmt_gpus", "fmt_ms", "fmt_n", "fmt_pct", "fmt_s", "plain_s"]


def fmt_s(x: float | None, never: str = "never") -> str:
    """Seconds for people: ms under 1 s; `never` for an infinite percentile."""
    if x is None:
        return never
    if x < 1.0:
        return f"{x * 1000:.0f} ms" if x >= 0.0095 else f"{x * 1000:.1f} ms"
    return f"{x:.2f} s"


def plain_s(x: float | None) -> str:
    """Seconds with two decimals, '∞' for never (dense tables)."""
    return "∞" if x is None else f"{x:.2f}"


def fmt_ms(x: float | None) -> str:
    """Whole milliseconds, '∞' for never (dense tables)."""
    return "∞" if x is None else f"{x * 1000:.0f}"


def fmt_pct(x: float | None, digits: int = 1) -> str:
    """A share as a percentage ('-' when there is none)."""
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def fmt_n(x: float | None) -> str:
    """A count or rate: thousands separators from 100 up, two decimals below."""
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def fmt_gpus(x: float | int | None) -> str:
    """A GPU count: whole when whole, else two decimals."""
    if x is None:
        return "-"
    return f"{x:g}" if isinstance(x, int) or float(x).is_integer() else f"{x:.2f}"
