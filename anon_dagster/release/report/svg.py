"""Inline SVG plots of the HTML report (no script, no external asset)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from .values import format_value


def svg_bars(labels: Sequence[str], values: Sequence[float], title: str, *, width: int = 560, height: int = 220, fmt: str = "{:g}") -> str:
    """An inline SVG bar chart (no script, no external asset)."""
    n = max(len(values), 1)
    top = max([float(v) for v in values] + [1e-12])
    pad_l, pad_b, pad_t = 40, 42, 36
    bw = (width - pad_l - 10) / n
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{html.escape(title)}" viewBox="0 0 {width} {height}">',
        f'<text x="{width / 2:.1f}" y="16" text-anchor="middle" font-size="13" font-weight="bold">{html.escape(title)}</text>',
        f'<line x1="{pad_l}" y1="{height - pad_b}" x2="{width - 10}" y2="{height - pad_b}" stroke="#444"/>',
    ]
    plot_h = height - pad_b - pad_t
    for i, (label, v) in enumerate(zip(labels, values, strict=True)):
        h = plot_h * float(v) / top
        x = pad_l + i * bw
        parts.append(f'<rect x="{x + 2:.1f}" y="{height - pad_b - h:.1f}" width="{max(bw - 4, 1):.1f}" '
                     f'height="{h:.1f}" fill="#3b6ea5"><title>{html.escape(str(label))}: {html.escape(fmt.format(v))}</title></rect>')
        parts.append(f'<text x="{x + bw / 2:.1f}" y="{height - pad_b - h - 3:.1f}" text-anchor="middle" font-size="10">{html.escape(fmt.format(v))}</text>')
        parts.append(f'<text x="{x + bw / 2:.1f}" y="{height - pad_b + 14:.1f}" text-anchor="middle" font-size="10">{html.escape(str(label))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def svg_frontier(fr: Mapping[str, Any], *, width: int = 560, height: int = 300) -> str:
    """An inline SVG scatter of the frontier: x the loss, y the share of rows suppressed.

    Each node meeting the whole policy is a dot (the chosen one larger, in red, labelled); nodes
    missing a non-monotone criterion have no loss and are not plotted (the table lists them).
    """
    pts = [n for n in fr["nodes"] if n["loss"] is not None]
    title = f"Risk-utility frontier: loss ({fr['metric']}) vs rows suppressed"
    pad_l, pad_r, pad_t, pad_b = 56, 16, 30, 44
    pw, ph = width - pad_l - pad_r, height - pad_t - pad_b
    xs = [float(n["loss"]) for n in pts]
    ys = [float(n["suppression_share"]) for n in pts]
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if x1 - x0 < 1e-12:
        x0, x1 = x0 - 0.5 * (abs(x0) or 1.0), x1 + 0.5 * (abs(x1) or 1.0)
    y1 = max(ys + [1e-12])
    # points are kept 8 px inside the axes so none is clipped at an edge
    sx = lambda v: pad_l + 8 + (pw - 16) * (v - x0) / (x1 - x0)  # noqa: E731
    sy = lambda v: pad_t + 8 + (ph - 16) * (1 - v / y1)  # noqa: E731
    e = html.escape
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{e(title)}" viewBox="0 0 {width} {height}">',
        f'<text x="{width / 2:.1f}" y="16" text-anchor="middle" font-size="13" font-weight="bold">{e(title)}</text>',
        f'<line x1="{pad_l}" y1="{pad_t + ph}" x2="{pad_l + pw}" y2="{pad_t + ph}" stroke="#444"/>',
        f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{pad_t + ph}" stroke="#444"/>',
        f'<text x="{pad_l + pw / 2:.1f}" y="{height - 6}" text-anchor="middle" font-size="11">loss ({e(str(fr["metric"]))})</text>',
        f'<text x="12" y="{pad_t + ph / 2:.1f}" text-anchor="middle" font-size="11" '
        f'transform="rotate(-90 12 {pad_t + ph / 2:.1f})">share of rows suppressed</text>',
        f'<text x="{sx(x0):.1f}" y="{pad_t + ph + 14}" text-anchor="middle" font-size="10">{e(format_value(x0))}</text>',
        f'<text x="{sx(x1):.1f}" y="{pad_t + ph + 14}" text-anchor="middle" font-size="10">{e(format_value(x1))}</text>',
        f'<text x="{pad_l - 4}" y="{sy(0.0) + 4:.1f}" text-anchor="end" font-size="10">0%</text>',
        f'<text x="{pad_l - 4}" y="{sy(y1) + 4:.1f}" text-anchor="end" font-size="10">{y1:.1%}</text>',
    ]
    # the chosen node last, so it is drawn on top
    for n, x, y in sorted(zip(pts, xs, ys, strict=True), key=lambda t: t[0]["chosen"]):
        levels = ", ".join(f"{c}={v}" for c, v in n["levels"].items())
        tip = f"{levels}: loss {format_value(x)}, {n['suppressed_rows']} rows suppressed"
        if n["chosen"]:
            parts.append(f'<circle class="chosen" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="7" fill="#b42318" '
                         f'stroke="#222"><title>chosen: {e(tip)}</title></circle>')
            parts.append(f'<text x="{sx(x) + 9:.1f}" y="{sy(y) - 8:.1f}" font-size="10">chosen</text>')
        else:
            parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="4" fill="#3b6ea5" '
                         f'fill-opacity="0.75"><title>{e(tip)}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)
