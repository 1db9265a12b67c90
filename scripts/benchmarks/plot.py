"""Plots of how figures grow with the catalogue, written as SVG by the catalogue run.

One chart per unit (milliseconds, MiB): the catalogue size on a logarithmic x axis, each
figure a line of its own on a logarithmic y axis, every point labelled with its value, so a
reader sees both the slope (what grows with the catalogue and what does not) and the number.

Invariants: standard library only; the output is plain SVG 1.1 a browser and GitHub render
without scripts or fonts of their own; the same figures always give the same bytes (a plot
committed to docs/ changes only when its figures do).
"""

import math
import re
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 760, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 270, 40, 50  # margins; the legend sits in the right one
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


def leading_number(text):
    """The first number in a figure's text ("0.114 (0.069)" -> 0.114); None when it has none."""
    match = re.search(r"-?\d[\d,]*(?:\.\d+)?", text or "")
    return float(match.group(0).replace(",", "")) if match else None


def _ticks(low, high):
    """Powers of ten (and their 2x and 5x) spanning [low, high], for a log axis."""
    ticks, exponent = [], math.floor(math.log10(low))
    while 10 ** exponent <= high * 10:
        for step in (1, 2, 5):
            value = step * 10 ** exponent
            if low / 1.0001 <= value <= high * 1.0001:
                ticks.append(value)
        exponent += 1
    return ticks or [low, high]


def _label(value):
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.3g}"
    return f"{value:.3f}".rstrip("0").rstrip(".")


def growth_svg(title, unit, sizes, series):
    """An SVG chart: `series` maps a figure's label to {catalogue size: value}; sizes in order.
    Points with no value (or a value <= 0, which a log axis cannot show) are left out."""
    points = {label: [(size, values[size]) for size in sizes if values.get(size, 0) and values[size] > 0]
              for label, values in series.items()}
    points = {label: line for label, line in points.items() if line}
    values = [value for line in points.values() for _, value in line] or [1.0]
    y_low, y_high = min(values) / 1.5, max(values) * 1.5
    x_low, x_high = min(sizes) / 1.6, max(sizes) * 1.6
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x_of(size):
        return LEFT + plot_w * (math.log(size) - math.log(x_low)) / (math.log(x_high) - math.log(x_low))

    def y_of(value):
        return TOP + plot_h * (1 - (math.log(value) - math.log(y_low)) / (math.log(y_high) - math.log(y_low)))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{LEFT}" y="22" font-size="14" font-weight="bold">{escape(title)}</text>']
    for tick in _ticks(y_low, y_high):
        y = y_of(tick)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_label(tick)}</text>')
    for size in sizes:
        x = x_of(size)
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + plot_h}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{size:,}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#444"/>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 12}" text-anchor="middle">'
               f'hosts in the catalogue (log scale)</text>')
    out.append(f'<text x="16" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 16 {TOP + plot_h / 2:.1f})">{escape(unit)} (log scale)</text>')
    label_y = _spread_labels(points, x_of, y_of)
    for index, (label, line) in enumerate(points.items()):
        colour = COLOURS[index % len(COLOURS)]
        path = " ".join(f"{x_of(size):.1f},{y_of(value):.1f}" for size, value in line)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for size, value in line:
            x, y = x_of(size), y_of(value)
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>')
            out.append(f'<text x="{x + 5:.1f}" y="{label_y[(label, size)]:.1f}" fill="{colour}">'
                       f'{_label(value)}</text>')
        legend_y = TOP + 14 + index * 30
        out.append(f'<line x1="{WIDTH - RIGHT + 14}" y1="{legend_y - 4}" x2="{WIDTH - RIGHT + 34}" '
                   f'y2="{legend_y - 4}" stroke="{colour}" stroke-width="2"/>')
        for row, words in enumerate(_wrap(label, 36)[:2]):
            out.append(f'<text x="{WIDTH - RIGHT + 40}" y="{legend_y + row * 13}">{escape(words)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _spread_labels(points, x_of, y_of, gap=12):
    """The y of each point's value label, {(series, size): y}: just above its point, moved
    down where it would overlap the label of another series at the same catalogue size."""
    placed = {}
    sizes = {size for line in points.values() for size, _ in line}
    for size in sizes:
        at = sorted((y_of(value) - 5, label) for label, line in points.items() for s, value in line if s == size)
        last = None
        for y, label in at:
            if last is not None and y < last + gap:
                y = last + gap
            placed[(label, size)] = last = y
    return placed


def _wrap(text, width):
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return lines + ([line] if line else [])
