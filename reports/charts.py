"""What every Plotly chart of the reports shares: font, colours, layout."""

from __future__ import annotations

import plotly.graph_objects as go

__all__ = ["FONT", "NEVER", "SIDE_COLORS", "layout"]

FONT = dict(family="system-ui, Segoe UI, Roboto, Helvetica, Arial, sans-serif", size=13)
SIDE_COLORS = ("#e6550d", "#3182bd", "#31a354", "#756bb1")
NEVER = "#b2182b"


def layout(fig: go.Figure, title: str, height: int = 420) -> go.Figure:
    """The house layout: white template, house font, legend under the plot."""
    fig.update_layout(title=title, template="plotly_white", font=FONT, height=height,
                      margin=dict(l=70, r=70, t=60, b=60), legend=dict(orientation="h", y=-0.2))
    return fig
