"""TRANSITIONAL: the old home of the formatters, kept only while reports/html_rank.py imports it.

Views import formatters from reports.fmt; delete this file with html_rank.py.
"""

from reports.fmt import fmt_n, fmt_pct, fmt_s

__all__ = ["fmt_n", "fmt_pct", "fmt_s"]
