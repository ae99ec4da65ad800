"""Rendering: the Markdown table, the JSON, and an HTML page with one SVG bar per (file, shape)."""

import json
import re

import pytest

from harness import __version__
from harness.contract.results import Status
from harness.leaderboard import render
from harness.leaderboard.rank import build_board
from harness.leaderboard.store import Store

from .samples import B200, SAMPLE_AUTHORS, fill_sample_store, make_run, stored

NOW = "2025-06-01 14:00 UTC"


@pytest.fixture
def board():
    with Store.open(":memory:") as store:
        fill_sample_store(store)
        return build_board("nvfp4_gemv", store.runs("nvfp4_gemv"), B200, __version__)


def test_markdown_lists_ranking_others_and_failures(board):
    text = render.render_markdown(board, NOW)
    assert text.startswith("# nvfp4_gemv leaderboard")
    assert "**NVIDIA B200**" in text and __version__ in text and NOW in text
    rows = [line for line in text.splitlines() if re.match(r"\| \d+ \|", line)]
    assert [row.split("|")[2].strip() for row in rows] == ["ada", "linus", "grace", "harness-baselines"]
    assert rows[0].split("|")[4].strip() == "9.293"  # geomean of 9.1, 18.0, 4.9
    assert "cutlass_v1.py" in text.split("## Other entries")[1].split("## Failed")[0]
    failed = text.split("## Failed")[1]
    assert "hang.py" in failed and "timeout" in failed and "process group was killed" not in failed
    assert "1 = m=7168 k=16384 l=1" in text


def test_markdown_escapes_pipes_and_newlines():
    run = make_run(None, status=Status.CRASHED, reason="a crash")
    text = render.render_markdown(build_board("nvfp4_gemv", [stored(run, run_id=1, author="line one\nline | two",
                                                                     file="x.py")]), NOW)
    assert "line one line \\| two" in text


def test_json_has_every_section(board):
    data = json.loads(json.dumps(render.board_json(board, NOW)))
    assert data["problem"] == "nvfp4_gemv" and data["device"] == B200 and data["harness_version"] == __version__
    assert [e["rank"] for e in data["ranking"]] == [1, 2, 3, 4]
    first = data["ranking"][0]
    assert first["author"] == "ada" and first["file"] == "cutlass_tcgen05.py" and len(first["sha256"]) == 64
    assert [b["median_us"] for b in first["benchmarks"]] == [9.1, 18.0, 4.9]
    assert first["benchmarks"][0]["shape"] == {"m": 7168, "k": 16384, "l": 1}
    assert first["device"]["sm_clock_mhz"] == "1965"
    assert {e["file"] for e in data["others"]} == {"cutlass_v1.py", "triton_gemv.py", "torch_reference.py"}
    assert {e["status"] for e in data["failed"]} == {"failed", "timeout", "rejected"}
    assert all("note" in e and "rank" not in e for e in data["failed"])


def test_html_has_one_bar_per_file_and_shape(board):
    page = render.render_html(board, NOW)
    svg = page[page.index("<svg"): page.index("</svg>")]
    bars = re.findall(r'<rect class="bar[^"]*"', svg)
    assert len(bars) == len(SAMPLE_AUTHORS) * 3  # 7 rankable files x 3 benchmark shapes
    assert svg.count("shape ") >= 3 and "% of speed of light" in svg
    assert "<title>ada · cutlass_tcgen05.py · m=7168 k=16384 l=1: 9.100 µs, 94.7% of SOL</title>" in svg


def test_html_is_self_contained_and_escaped():
    run = make_run((10.0, 10.0, 10.0))
    hostile = stored(run, run_id=1, author="<script>alert(1)</script>", file="x.py")
    page = render.render_html(build_board("nvfp4_gemv", [hostile]), NOW)
    assert "<script" not in page and "&lt;script&gt;" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # no external asset or link
    assert "@import" not in page and "url(" not in page


def test_chart_without_speed_of_light_shows_times():
    run = make_run((10.0, 20.0, 30.0), sol_us=None)
    svg = render.render_chart(build_board("nvfp4_gemv", [stored(run, run_id=1, author="a", file="x.py")]))
    assert "median time, µs (lower is better)" in svg and svg.count('class="bar') == 3


def test_empty_board_renders():
    board = build_board("nvfp4_gemv", [])
    assert "No rankable run yet" in render.render_html(board, NOW)
    assert "No rankable run yet" in render.render_markdown(board, NOW)


def test_shape_labels_are_short_for_grouped_shapes():
    case = {"m": [80, 176, 64], "n": [4096, 4096, 4096], "k": [7168] * 3, "g": 3, "seed": 1}
    assert render.shape_label(case) == "m=64..176 n=4096x3 k=7168x3 g=3"


@pytest.mark.parametrize(("value", "top"), [(0.7, 1.0), (93.0, 100.0), (101.0, 200.0), (23.0, 25.0), (0.0, 1.0)])
def test_axis_top(value, top):
    assert render.nice_ceiling(value) == pytest.approx(top)


def test_write_site_writes_every_file(board, tmp_path):
    written = render.write_site([board], tmp_path, NOW)
    names = sorted(p.relative_to(tmp_path).as_posix() for p in written)
    assert names == ["index.html", "nvfp4_gemv/LEADERBOARD.md", "nvfp4_gemv/index.html",
                     "nvfp4_gemv/leaderboard.json"]
    index = (tmp_path / "index.html").read_text()
    assert 'href="nvfp4_gemv/index.html"' in index and "ada" in index


def test_html_escapes_special_characters_in_authors_and_file_names(tmp_path):
    author = "O'Brien & <b>Co</b>"
    name = 'bad <img src=x onerror="alert(1)"> & more.py'
    ranked = stored(make_run((10.0, 10.0, 10.0)), run_id=1, author=author, file="x.py")
    crashed = stored(make_run(None, status=Status.CRASHED, reason="a crash"), run_id=2, author="eve", file=name)
    board = build_board("nvfp4_gemv", [ranked, crashed])
    page = render.render_html(board, NOW)
    assert "<b>Co</b>" not in page and "<img" not in page
    assert "O&#39;Brien &amp; &lt;b&gt;Co&lt;/b&gt;" in page  # in the table, the bar titles and the legend
    assert 'bad &lt;img src=x onerror=&#34;alert(1)&#34;&gt; &amp; more' in page
    svg = render.render_chart(board)
    assert "<title>O&#39;Brien &amp; &lt;b&gt;Co&lt;/b&gt; · x.py" in svg
    index = render.render_index([board], NOW)
    assert "<b>Co</b>" not in index and "O&#39;Brien &amp; &lt;b&gt;Co&lt;/b&gt; · 10.00 µs" in index


MARKER = "LEAKED-7f3a9c"


def test_no_failure_reason_reaches_a_public_page(tmp_path):
    """A reason is the submission's own text (a crash message can print anything it read): the
    pages show the status label only; the reason stays in the stored result."""
    ranked = stored(make_run((10.0, 10.0, 10.0)), run_id=1, author="ada", file="ok.py")
    failed = [stored(make_run(None, status=status, reason=f"Traceback: RuntimeError: {MARKER} secret=hunter2"),
                     run_id=run_id, author=f"x{run_id}", file=f"{status.value}.py")
              for run_id, status in enumerate((Status.CRASHED, Status.BAD_INPUT, Status.FAILED, Status.CUDA_ERROR), 2)]
    board = build_board("nvfp4_gemv", [ranked, *failed])
    assert len(board.failed) == 4 and all(MARKER in e.result.reason for e in board.failed)
    pages = {"markdown": render.render_markdown(board, NOW), "html": render.render_html(board, NOW),
             "json": json.dumps(render.board_json(board, NOW)), "index": render.render_index([board], NOW)}
    for path in render.write_site([board], tmp_path, NOW):
        pages[path.name + str(path.parent)] = path.read_text()
    assert [kind for kind, text in pages.items() if MARKER in text or "hunter2" in text] == []
    assert all(status.value in pages["html"] and status.value in pages["markdown"]
               for status in (Status.CRASHED, Status.BAD_INPUT, Status.FAILED, Status.CUDA_ERROR))


def test_a_needs_label_is_the_only_reason_text_shown():
    needs = f"needs an sm_100 (Blackwell) GPU: it targets sm_100a; this machine: {MARKER}"
    run = stored(make_run(None, status=Status.UNSUPPORTED, reason=needs), run_id=1, author="a", file="x.py")
    board = build_board("nvfp4_gemv", [run])
    for text in (render.render_markdown(board, NOW), render.render_html(board, NOW),
                 json.dumps(render.board_json(board, NOW))):
        assert "needs an sm_100 (Blackwell) GPU" in text and MARKER not in text


def test_the_vendor_column_sits_beside_speed_of_light():
    """A run timed against the vendor library shows its % of vendor in every format; others show '-'."""
    run = make_run([10.0, 20.0, 5.0])
    run.geomean_pct_of_vendor = 87.5
    board = build_board("nvfp4_gemv", [stored(run, run_id=1, author="ada", file="a.py")], B200, __version__)
    text = render.render_markdown(board, NOW)
    header = next(line for line in text.splitlines() if "% of SOL" in line)
    assert "% of vendor" in header
    row = next(line for line in text.splitlines() if re.match(r"\| 1 \|", line))
    assert "87.5" in row
    assert render.board_json(board, NOW)["ranking"][0]["geomean_pct_of_vendor"] == 87.5
    html = render.render_html(board, NOW)
    assert "% of vendor" in html and "87.5" in html


def test_the_index_counts_files_that_passed_unranked():
    """Two CPU runs that passed showed as '0 ranked, 0 failed': they are counted apart."""
    cpu = [stored(make_run((50.0, 90.0, 20.0), device_type="cpu"), run_id=i, author=a, file=f"{a}.py")
           for i, a in ((1, "ada"), (2, "bob"))]
    board = build_board("nvfp4_gemv", cpu)
    assert len(board.not_rankable) == 2 and not board.ranking and not board.failed
    index = render.render_index([board], NOW)
    header = re.findall(r"<th[^>]*>([^<]*)</th>", index)
    cells = re.findall(r'<td class="num">(\d+)</td>', index)
    assert header[3:7] == ["ranked", "passed, unranked", "failed", "not run"] and cells == ["0", "2", "0", "0"]
