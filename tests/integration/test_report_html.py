"""The HTML report in a real browser: headless Chromium (Debian's `chromium` package) takes a screenshot, and the
charts' fill colours must cover areas that a page without the charts does not have. Skips without Chromium.

The PNG is decoded with the standard library (zlib + struct); no imaging package is needed."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from collections import Counter
from pathlib import Path

import pytest

from bot.base.results import read_run
from bot.compare.causes import explain_comparison
from bot.compare.comparison import Comparison, compare_runs
from bot.compare.diff import parse_diff
from bot.report import charts
from bot.report.render import render_html

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
CAUSES = GOLDEN.parent / "causes"  # the two-cause check of the shop (see its make_fixture.py)
CAUSE_BG = "#fde8e4"  # .cause in report.html.j2
WINDOW = (1280, 3600)  # the charts come after the verdict, the causes and the failing cases
BROWSERS = ("chromium", "chromium-browser", "/usr/bin/chromium")


def chromium() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("headless Chromium is absent (Debian: apt-get install chromium)")


def screenshot(html: str, workdir: Path, name: str, window: tuple[int, int] = WINDOW) -> bytes:
    page = workdir / f"{name}.html"
    png = workdir / f"{name}.png"
    page.write_text(html, encoding="utf-8")
    cmd = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        f"--user-data-dir={workdir / 'profile'}",
        f"--screenshot={png}",
        f"--window-size={window[0]},{window[1]}",
        page.as_uri(),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert png.is_file(), f"Chromium wrote no screenshot (exit {done.returncode}): {done.stderr[-2000:]}"
    return png.read_bytes()


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def _unfilter(kind: int, row: bytearray, prev: bytes, bpp: int) -> None:
    n = len(row)
    if kind == 1:
        for i in range(bpp, n):
            row[i] = (row[i] + row[i - bpp]) & 0xFF
    elif kind == 2:
        row[:] = bytes((x + y) & 0xFF for x, y in zip(row, prev, strict=True))
    elif kind == 3:
        for i in range(n):
            left = row[i - bpp] if i >= bpp else 0
            row[i] = (row[i] + ((left + prev[i]) >> 1)) & 0xFF
    elif kind == 4:
        for i in range(n):
            left = row[i - bpp] if i >= bpp else 0
            up_left = prev[i - bpp] if i >= bpp else 0
            row[i] = (row[i] + _paeth(left, prev[i], up_left)) & 0xFF


def decode_png(data: bytes) -> tuple[int, int, list[bytes], int]:
    """(width, height, rows of raw pixel bytes, bytes per pixel) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, bytearray(), None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    assert header is not None, "no IHDR chunk"
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, f"unsupported PNG layout {header}"
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(bytes(idat))
    stride = width * bpp
    rows, prev = [], bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        row = bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(raw[start], row, prev, bpp)
        prev = bytes(row)
        rows.append(prev)
    return width, height, rows, bpp


def colour_counts(png: bytes) -> tuple[int, int, Counter[tuple[int, int, int]]]:
    width, height, rows, bpp = decode_png(png)
    counts: Counter[tuple[int, int, int]] = Counter()
    for row in rows:
        counts.update(zip(row[0::bpp], row[1::bpp], row[2::bpp], strict=True))
    return width, height, counts


def rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def without_charts(html: str) -> str:
    """The same page with every <svg> element removed: the control for the colour counts."""
    out, pos = [], 0
    while (start := html.find("<svg", pos)) >= 0:
        end = html.index("</svg>", start) + len("</svg>")
        out.append(html[pos:start])
        pos = end
    return "".join(out) + html[pos:]


@pytest.fixture(scope="module")
def report_html() -> str:
    chromium()
    comparison = Comparison.model_validate_json((GOLDEN / "comparison.json").read_text(encoding="utf-8"))
    head, base = read_run(GOLDEN / "head_run.json"), read_run(GOLDEN / "base_run.json")
    return render_html(comparison, head=head, base=base)


def test_screenshot_shows_the_charts(report_html: str, tmp_path: Path) -> None:
    width, height, counts = colour_counts(screenshot(report_html, tmp_path, "report"))
    _, _, control = colour_counts(screenshot(without_charts(report_html), tmp_path, "control"))
    assert (width, height) == WINDOW
    white = counts[(255, 255, 255)]
    assert white < width * height * 0.95, "the screenshot is (almost) blank"
    assert len(counts) > 200, "too few colours for a page with text and charts"
    bars = {
        "base": charts.BASE_COLOR,
        "head": charts.HEAD_COLOR,
        "regressed": charts.GROUP_COLORS["regressed"],
        "fixed": charts.GROUP_COLORS["fixed"],
        "flaky": charts.GROUP_COLORS["flaky"],
        "still passing": charts.GROUP_COLORS["still_passing"],
    }
    for name, colour in bars.items():
        drawn = counts[rgb(colour)] - control[rgb(colour)]
        assert drawn > 800, (
            f"the {name} bars ({colour}) cover only {drawn} pixels more than a page without charts"
        )


def test_hostile_text_stays_text_in_the_browser(report_html: str, tmp_path: Path) -> None:
    """Chromium dumps the DOM: the hostile question's <script> is text, not an element."""
    page = tmp_path / "dom.html"
    page.write_text(report_html, encoding="utf-8")
    cmd = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-sync",
        "--disable-background-networking",
        "--disable-component-update",
        f"--user-data-dir={tmp_path / 'p'}",
        "--dump-dom",
        page.as_uri(),
    ]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=180).stdout
    assert "<svg" in dom and "Pass rate by tag" in dom
    assert "<script" not in dom.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom


def first_row(rows: list[bytes], bpp: int, colour: str, *, at_least: int) -> int | None:
    """The first pixel row holding `at_least` pixels of `colour`: a box or a bar, not a glyph's stray pixel."""
    want = rgb(colour)
    for y, row in enumerate(rows):
        if sum(p == want for p in zip(row[0::bpp], row[1::bpp], row[2::bpp], strict=True)) >= at_least:
            return y
    return None


def test_screenshot_shows_the_causes_above_the_charts(tmp_path: Path) -> None:
    """The two-cause report: the causes box is drawn near the top, the charts' bars far below it."""
    chromium()
    base, head = read_run(CAUSES / "base.json"), read_run(CAUSES / "head.json")
    comparison = explain_comparison(compare_runs(base, head), parse_diff((CAUSES / "pr.diff").read_text()))
    html = render_html(comparison, head=head, base=base)
    _, height, rows, bpp = decode_png(screenshot(html, tmp_path, "causes", window=(1280, 5000)))
    causes = first_row(rows, bpp, CAUSE_BG, at_least=300)
    bars = [first_row(rows, bpp, c, at_least=60) for c in (charts.HEAD_COLOR, charts.BASE_COLOR)]
    assert causes is not None and causes < 600, f"the causes box is not near the top (row {causes})"
    assert all(b is not None for b in bars), f"no chart bars in the {height} px screenshot"
    assert causes < min(b for b in bars if b is not None) - 1000, (causes, bars)
