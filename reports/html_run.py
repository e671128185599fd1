"""TRANSITIONAL: the old home of the chart basics, kept only while reports/html_rank.py imports it.

Run views live in reports/run.py and reports/run_charts.py, chart basics in
reports/charts.py; delete this file with html_rank.py.
"""

from reports.charts import FONT, SIDE_COLORS

__all__ = ["FONT", "SIDE_COLORS"]
