"""Every number a report prints, formatted in one place.

`None` is how results say "no finite value": a percentile that landed on a
request not answered OK, or a figure that does not apply. Each formatter says
what it prints for it. A formatter's text carries its own unit (`330 ms`,
`1.08x`, `17.2%`), so a caller never appends one: `fmt_measured` splits a
figure's unit label for tables that print the value beside its label.
"""

from __future__ import annotations

__all__ = ["fmt_gpus", "fmt_measured", "fmt_ms", "fmt_n", "fmt_pct", "fmt_s", "fmt_share", "fmt_x", "plain_s"]


def fmt_s(x: float | None, never: str = "never") -> str:
    """Seconds for people, durations and instants alike: ms under 1 s (one decimal
    under 10 ms), else seconds with two decimals; `never` for None."""
    if x is None:
        return never
    if abs(x) < 1.0:
        return f"{x * 1000:.0f} ms" if abs(x) >= 0.0095 else f"{x * 1000:.1f} ms"
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


def fmt_share(x: float | None) -> str:
    """A share of requests: one decimal, but a small non-zero share keeps two
    significant digits (0.048%) so it never reads as nothing; '-' for none."""
    if x is None:
        return "-"
    if 0 < abs(x) < 0.001:
        return f"{100 * x:.2g}%"
    return f"{100 * x:.1f}%"


def fmt_x(x: float | None, digits: int = 2) -> str:
    """A ratio or multiplier: '1.08x' ('-' when there is none)."""
    return "-" if x is None else f"{x:.{digits}f}x"


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


def fmt_measured(x: float | None, unit: str) -> tuple[str, str]:
    """A figure whose unit label starts with its unit word ('share of GPU time',
    's of p99 ...', 'x the full-batch GPU time'): (the value in that unit, the rest
    of the label), to print side by side without the unit twice:
    ('+43 ms', 'of p99 ...'), ('2.40x', 'the full-batch ...'), ('8.8%', 'of batch slots ...').
    None prints as '∞' for seconds, '-' otherwise."""
    word, _, rest = unit.partition(" ")
    if word == "share":
        return ("-" if x is None else fmt_pct(x, 2 if abs(x) < 0.01 else 1)), rest
    if word == "s":
        return ("∞" if x is None else ("+" if x >= 0 else "-") + fmt_s(abs(x))), rest
    if word == "x":
        return fmt_x(x), rest
    return ("-" if x is None else f"{x:.3g}"), unit


def short_share(x: float | None) -> str:
    """A share in at most 4 characters: 0, <.1%, 2.9%, 19%, 100%."""
    if x is None:
        return "-"
    if x == 0:
        return "0"
    if x < 0.00095:
        return "<.1%"
    return f"{100 * x:.1f}%" if x < 0.0995 else f"{100 * x:.0f}%"


def clip(text: str, width: int) -> str:
    """`text` cut to `width` characters, an ellipsis marking the cut."""
    return text if len(text) <= width else text[: width - 1] + "…"
