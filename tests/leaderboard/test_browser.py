"""The page as a browser draws it: headless Chromium screenshots it and dumps its DOM.

Skipped only where Chromium is missing and CI is not set; under CI it must run.
"""

import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from harness import __version__
from harness.leaderboard import render
from harness.leaderboard.rank import build_board
from harness.leaderboard.store import Store

from .samples import B200, SAMPLE_AUTHORS, fill_sample_store


def find_chromium() -> str | None:
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium"
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM = find_chromium()
IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false")
pytestmark = pytest.mark.skipif(CHROMIUM is None and not IN_CI, reason="no chromium here (CI installs it)")


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    assert CHROMIUM, "CI is set but chromium is not installed (apt-get install -y chromium)"
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run",
               f"--user-data-dir={tmp_path / 'chromium-profile'}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=90, check=True)


def screenshot(tmp_path: Path, page: Path, png: Path, size: str = "1200,900") -> None:
    chromium(tmp_path, f"--screenshot={png}", f"--window-size={size}", page.as_uri())


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the RGB rows of an 8-bit RGB/RGBA, non-interlaced PNG (no Pillow needed)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    offset, idat, header = 8, b"", None
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset: offset + 8])
        body = data[offset + 8: offset + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        offset += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, row = raw[start], bytearray(raw[start + 1: start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                row[i] = (row[i] + row[i - bpp]) & 255
        elif kind == 2:
            row = bytearray((a + b) & 255 for a, b in zip(row, previous))
        elif kind == 3:
            for i in range(stride):
                row[i] = (row[i] + ((row[i - bpp] if i >= bpp else 0) + previous[i]) // 2) & 255
        elif kind == 4:
            for i in range(stride):
                a = row[i - bpp] if i >= bpp else 0
                b, c = previous[i], previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(row) if bpp == 3 else b"".join(row[i: i + 3] for i in range(0, stride, 4)))
        previous = row
    return width, height, rows


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    with Store.open(":memory:") as store:
        fill_sample_store(store)
        board = build_board("nvfp4_gemv", store.runs("nvfp4_gemv"), B200, __version__)
    render.write_site([board], out, "2025-06-01 14:00 UTC")
    return out


def test_the_page_is_drawn_with_its_chart(site, tmp_path):
    png = tmp_path / "page.png"
    screenshot(tmp_path, site / "nvfp4_gemv" / "index.html", png)
    width, height, rows = png_pixels(png.read_bytes())
    assert (width, height) == (1200, 900)
    colours = {row[i: i + 3] for row in rows[::2] for i in range(0, len(row), 6)}
    assert len(colours) > 50, f"only {len(colours)} colours: the page looks blank"
    for hex_colour in render.PALETTE[:3]:  # the first three bars are drawn in their colours
        assert bytes.fromhex(hex_colour[1:]) in colours, f"no {hex_colour} pixel: the bars are not drawn"


def test_the_dom_holds_the_svg_bars(site, tmp_path):
    dom = chromium(tmp_path, "--dump-dom", (site / "nvfp4_gemv" / "index.html").as_uri()).stdout
    assert "<svg" in dom
    assert len(re.findall(r'<rect class="bar', dom)) == len(SAMPLE_AUTHORS) * 3


def test_the_index_page_links_the_problem(site, tmp_path):
    dom = chromium(tmp_path, "--dump-dom", (site / "index.html").as_uri()).stdout
    assert 'href="nvfp4_gemv/index.html"' in dom
