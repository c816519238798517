"""A terminal window as an SVG picture: the screen a terminal emulator (pyte) shows after a
pseudo-terminal capture, for docs/cli.md. Each run of cells with one style is a <tspan>
placed at its column, so wide characters and styles line up as in a window."""

from __future__ import annotations

from html import escape
from itertools import groupby

import pyte

CELL_WIDTH, LINE_HEIGHT, FONT_SIZE, MARGIN = 8.4, 18, 14, 14
BACKGROUND, FOREGROUND = "#1e1e1e", "#d4d4d4"
# The 16 named colours, as a dark terminal theme shows them; 256-colour cells are hex already.
NAMED = {
    "black": "#000000", "red": "#cd3131", "green": "#0dbc79", "brown": "#e5e510", "blue": "#2472c8",
    "magenta": "#bc3fbc", "cyan": "#11a8cd", "white": "#e5e5e5",
    "brightblack": "#666666", "brightred": "#f14c4c", "brightgreen": "#23d18b", "brightbrown": "#f5f543",
    "brightblue": "#3b8eea", "brightmagenta": "#d670d6", "brightcyan": "#29b8db", "brightwhite": "#ffffff",
}


def _colour(name: str, default: str) -> str:
    if name == "default":
        return default
    return NAMED.get(name, f"#{name}" if len(name) == 6 else default)


def _style(char: pyte.screens.Char) -> tuple[str, str, bool, bool, bool]:
    foreground, background = _colour(char.fg, FOREGROUND), _colour(char.bg, BACKGROUND)
    if char.reverse:
        foreground, background = background, foreground
    return foreground, background, char.bold, char.italics, char.underscore


def svg(screen: pyte.Screen, rows: int, title: str) -> str:
    """The first `rows` rows of `screen`, in a window with `title`."""
    width = MARGIN * 2 + CELL_WIDTH * screen.columns
    height = MARGIN * 2 + 28 + LINE_HEIGHT * rows
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height}" viewBox="0 0 {width:.0f} {height}">',
        f'<rect width="100%" height="100%" rx="8" fill="{BACKGROUND}"/>',
        f'<text x="{width / 2:.0f}" y="22" fill="#9d9d9d" font-family="sans-serif" font-size="12" text-anchor="middle">{escape(title)}</text>',
        f'<g font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="{FONT_SIZE}" xml:space="preserve">',
    ]
    for row in range(rows):
        line = screen.buffer[row]
        y = MARGIN + 28 + LINE_HEIGHT * row
        cells = [(column, line[column]) for column in range(screen.columns)]
        for style, run in groupby(cells, key=lambda cell: _style(cell[1])):
            run = list(run)
            foreground, background, bold, italic, underline = style
            x = MARGIN + CELL_WIDTH * run[0][0]
            if background != BACKGROUND:
                parts.append(f'<rect x="{x:.1f}" y="{y}" width="{CELL_WIDTH * len(run):.1f}" height="{LINE_HEIGHT}" fill="{background}"/>')
            text = "".join(char.data for _, char in run)
            if not text.strip():
                continue
            # Each run spans exactly its cells, whatever the font's own advance (an italic
            # face, a wide character); spaces kept as they are.
            attributes = (f'x="{x:.1f}" y="{y + FONT_SIZE}" fill="{foreground}" textLength="{CELL_WIDTH * len(run):.1f}" '
                          'lengthAdjust="spacingAndGlyphs" style="white-space:pre"')
            attributes += ' font-weight="bold"' * bold + ' font-style="italic"' * italic + ' text-decoration="underline"' * underline
            parts.append(f"<text {attributes}>{escape(text)}</text>")
    parts.append("</g></svg>")
    return "\n".join(parts) + "\n"
