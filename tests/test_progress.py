"""vistest.progress: a long step shows its progress on stderr even where stderr is not a terminal
(issue #39: `make demo` rendered the dynamic demo for minutes behind one line in a log)."""
from __future__ import annotations

import io

from vistest import progress


def test_not_a_terminal_gets_a_line_every_interval():
    now = [0.0]
    out = io.StringIO()
    bar = progress._LineBar(240, "Rendering demo scene", out, interval=10.0, clock=lambda: now[0])
    for _ in range(240):
        now[0] += 0.25  # a frame every 0.25 s: 60 s in all
        bar.update(1)
    lines = out.getvalue().splitlines()
    assert lines[0] == "Rendering demo scene"
    assert len(lines) == 1 + 6  # one line every 10 s
    assert lines[1] == "Rendering demo scene: 40/240 (17%), 10s elapsed, about 50s left"
    assert lines[-1] == "Rendering demo scene: 240/240 (100%), 60s elapsed"
    bar.length += 240  # raised on the way (vistest.videos.write): the share follows
    now[0] += 10
    bar.update(0)
    assert out.getvalue().splitlines()[-1] == "Rendering demo scene: 240/480 (50%), 70s elapsed, about 70s left"


def test_progress_bar_on_captured_stderr(capsys, monkeypatch):
    """stderr that is not a terminal: the label, then lines; a short step prints the label only;
    disabled (--quiet): nothing."""
    now = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(progress._LineBar.__init__, "__defaults__", (progress.LINE_INTERVAL_S, lambda: now[0]))
    with progress.progress_bar(4, "short") as bar:
        bar.update(4)
    assert capsys.readouterr().err == "short\n"
    with progress.progress_bar(4, "long") as bar:
        for _ in range(4):
            now[0] += 6
            bar.update(1)
    assert capsys.readouterr().err.splitlines() == ["long", "long: 2/4 (50%), 12s elapsed, about 12s left",
                                                    "long: 4/4 (100%), 24s elapsed"]
    with progress.progress_bar(4, "quiet", enabled=False) as bar:
        now[0] += 60
        bar.update(4)
    assert capsys.readouterr().err == ""
