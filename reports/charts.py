"""What every Plotly chart of the reports shares: font, colours, layout."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

__all__ = ["FONT", "NEVER", "OUTCOME_COLORS", "SIDE_COLORS", "layout", "make_subplots"]

FONT = dict(family="system-ui, Segoe UI, Roboto, Helvetica, Arial, sans-serif", size=13)
SIDE_COLORS = ("#e6550d", "#3182bd", "#31a354", "#756bb1")
NEVER = "#b2182b"
# One colour per request outcome (harness.results.run.Outcome), good to bad; apart
# from the side colours, so an outcome never reads as a target.
OUTCOME_COLORS = {"within_slo": "#1a9850", "late": "#d9ef8b", "shed": "#9e9ac8", "timed_out": "#d73027",
                  "failed": "#7f0000", "lost": "#252525"}


def make_subplots(*args: Any, **kwargs: Any) -> go.Figure:
    """plotly's `make_subplots`, imported at the first chart drawn: the import builds plotly's
    Figure class (about 0.15 s), which a terminal view, drawing none, never needs."""
    from plotly.subplots import make_subplots as build

    return build(*args, **kwargs)


def layout(fig: go.Figure, title: str, height: int = 420) -> go.Figure:
    """The house layout: white template, house font, legend under the plot."""
    fig.update_layout(title=title, template="plotly_white", font=FONT, height=height,
                      margin=dict(l=70, r=70, t=60, b=60), legend=dict(orientation="h", y=-0.2))
    return fig
