"""The live display on a terminal, plain lines elsewhere, and the callback adapter."""

import io

from harness.display.progress import LineProgress, LiveProgress, as_progress, for_stream


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_pipe_gets_plain_lines_and_a_terminal_gets_the_live_bar():
    assert isinstance(for_stream(io.StringIO()), LineProgress)
    assert isinstance(for_stream(Terminal()), LiveProgress)


def test_plain_lines_carry_every_finished_item_and_note():
    lines = []
    progress = as_progress(lines.append)
    progress.begin(2, "s.py")
    progress.working("test m=128")
    progress.step("[1/2] test m=128: PASS")
    progress.note("imported in 1.0 s")
    progress.close()
    assert lines == ["[1/2] test m=128: PASS", "imported in 1.0 s"]


def test_the_live_display_prints_finished_items_above_its_bar():
    screen = Terminal()
    progress = LiveProgress(screen)
    progress.begin(3, "triton_gemv.py")
    progress.working("test m=128 k=256 l=1")
    progress.step("[1/3] test m=128 k=256 l=1: PASS")
    progress.close()
    text = screen.getvalue()
    assert "[1/3] test m=128 k=256 l=1: PASS" in text and "triton_gemv.py" in text


def test_nothing_to_report_to_is_silent(capsys):
    progress = as_progress(None)
    progress.begin(1, "s.py")
    progress.step("ignored")
    progress.note("ignored too")
    assert capsys.readouterr() == ("", "")


def test_details_show_only_on_a_verbose_display_and_in_an_organizers_log():
    quiet, loud = [], []
    LineProgress(quiet.append).detail("sandbox: on")
    LineProgress(loud.append, verbose=True).detail("sandbox: on")
    assert quiet == [] and loud == ["sandbox: on"]
    logged = []
    as_progress(logged.append).detail("sandbox: on")  # the leaderboard's and the cluster's callbacks keep them
    assert logged == ["sandbox: on"]
    screen = Terminal()
    live = LiveProgress(screen)
    live.begin(1, "s.py")
    live.detail("sandbox: on")
    live.close()
    assert "sandbox" not in screen.getvalue()


def test_the_bar_shows_time_left_only_once_it_can_be_estimated():
    from types import SimpleNamespace

    from harness.display.progress import TimeLeftColumn

    column = TimeLeftColumn()
    unknown = SimpleNamespace(time_remaining=None, finished=False, total=3)
    assert column.render(unknown).plain == ""  # not "-:--:--" before the first item finished
    assert column.render(SimpleNamespace(time_remaining=12.0, finished=False, total=3)).plain == "0:00:12 left"
    assert column.render(SimpleNamespace(time_remaining=0.0, finished=True, total=3)).plain == ""
