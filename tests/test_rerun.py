"""A rerun that changes nothing rewrites nothing (docs/faults.md, "A rerun that changes nothing").

vistest.atomic leaves a file whose new bytes are the ones it already holds untouched, so its
modification time stays, so the scene record (which keeps every file's time) stays too. Checked
here on the smallest demo (``demo_tiny`` in conftest.py): two reruns of ``vistest run`` and of
``vistest batch`` leave every file of the run folder with the same bytes (scene records and locks
included) and the same modification time (all but the scene lock, whose holder is written into it
each time a run takes it); a control shows the comparison sees a real change. The helpers
themselves (write_atomic, atomic_path, StagedFiles, replace_output) are checked directly first.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import vistest  # noqa: F401  (sets PYOPENGL_PLATFORM before pyrender is imported)
from vistest.atomic import StagedFiles, atomic_path, replace_output, temp_path_for, write_atomic
from vistest.synth.demo import demo_batch
from vistest.errors import OutputError

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "examples" / "demo-questions.jsonl"
FAST = ["--budgets", "16,32,all", "--crf", "10", "--quiet"]
OLD_NS = 1_000_000_000 * 10**9  # a modification time long past (2001), set by the unit tests


def cli(*args):
    r = subprocess.run([sys.executable, "-m", "vistest.cli", *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """{relative path: (bytes, mtime_ns)} of every file below ``folder``, hidden ones included."""
    return {p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def differences(a: dict, b: dict, times: bool = True) -> list[str]:
    """What differs between two snapshots: files only in one, other bytes, other times (with
    ``times``; never for lock files, whose times change when a run takes the lock)."""
    out = [f"{p}: only in one" for p in sorted(set(a) ^ set(b))]
    for p in sorted(set(a) & set(b)):
        if a[p][0] != b[p][0]:
            out.append(f"{p}: other bytes")
        elif times and a[p][1] != b[p][1] and not p.endswith(".lock"):
            out.append(f"{p}: rewritten (same bytes, new time)")
    return out


# ---------------------------------------------------------------------------------------
# the helpers
# ---------------------------------------------------------------------------------------
def aged(path: Path) -> Path:
    os.utime(path, ns=(OLD_NS, OLD_NS))
    return path


def test_write_atomic_leaves_a_file_holding_the_same_bytes_untouched(tmp_path):
    p = tmp_path / "x.json"
    assert write_atomic(p, '{"a": 1}\n') is True
    ino = aged(p).stat().st_ino
    assert write_atomic(p, '{"a": 1}\n') is False and write_atomic(p, b'{"a": 1}\n') is False
    assert p.stat().st_mtime_ns == OLD_NS and p.stat().st_ino == ino
    assert write_atomic(p, '{"a": 2}\n') is True  # other bytes: replaced
    assert p.read_text() == '{"a": 2}\n' and p.stat().st_mtime_ns != OLD_NS
    (tmp_path / "target").write_text("same")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    assert write_atomic(tmp_path / "link", "same") is True  # a link is replaced by a file
    assert not (tmp_path / "link").is_symlink()
    assert not [q for q in tmp_path.iterdir() if ".tmp" in q.name]


def test_an_interrupt_while_the_temporary_file_is_made_leaves_none(tmp_path, monkeypatch):
    """SystemExit (SIGTERM in a batch worker) or Ctrl-C raised just after the temporary file was created,
    before atomic_path or write_atomic had it: the file is removed, the destination untouched (a stopped
    batch worker left its claim's temporary file in .vistest/running/)."""
    from vistest import atomic

    dest = tmp_path / "claim.json"
    dest.write_text("before")
    real_close = os.close
    for exc in (SystemExit(143), KeyboardInterrupt()):
        def close_then_stop(fd, exc=exc):
            real_close(fd)
            raise exc

        monkeypatch.setattr(atomic.os, "close", close_then_stop)
        with pytest.raises(type(exc)):
            write_atomic(dest, "after")
        monkeypatch.setattr(atomic.os, "close", real_close)
        assert sorted(x.name for x in tmp_path.iterdir()) == ["claim.json"] and dest.read_text() == "before"


def test_atomic_path_and_staged_files_keep_unchanged_files(tmp_path):
    p = tmp_path / "a.bin"
    p.write_bytes(b"\0" * 5000)
    aged(p)
    with atomic_path(p) as tmp:
        tmp.write_bytes(b"\0" * 5000)
    assert p.stat().st_mtime_ns == OLD_NS
    with atomic_path(p) as tmp:
        tmp.write_bytes(b"\0" * 4999 + b"\1")
    assert p.read_bytes()[-1:] == b"\1" and p.stat().st_mtime_ns != OLD_NS
    q = tmp_path / "b.txt"
    q.write_text("report")
    aged(q)
    with StagedFiles() as staged:
        staged.write(p, b"\0" * 4999 + b"\1")
        staged.write(q, "report, changed")
    assert aged(p).stat().st_mtime_ns == OLD_NS and q.read_text() == "report, changed"
    with StagedFiles() as staged:
        staged.write(p, b"\0" * 4999 + b"\1")
        staged.write(q, "report, changed")
        staged.write(tmp_path / "c.txt", "new")
        assert staged.commit() == [tmp_path / "c.txt"]  # only what was replaced
    assert p.stat().st_mtime_ns == OLD_NS
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a.bin", "b.txt", "c.txt"]


def test_replace_output_names_the_destination(tmp_path):
    dest = tmp_path / "out"
    (dest / "inside").mkdir(parents=True)  # a folder in the way: the rename is refused (EISDIR)
    tmp = temp_path_for(tmp_path / "out.json")
    with pytest.raises(OutputError, match=f"^{dest}: cannot write"):
        replace_output(tmp, dest)
    with pytest.raises(OutputError, match=f"^{dest}: cannot write"):
        replace_output(tmp, dest, keep_same=True)


def test_a_taken_temporary_name_is_skipped_not_an_error(tmp_path, monkeypatch):
    """EEXIST is an environment errno (output_errors), but a temporary name that exists is
    only taken: temp_path_for draws another."""
    from vistest import atomic

    tags = iter(["aaaaaaaa_1_h", "aaaaaaaa_1_h", "bbbbbbbb_1_h"])
    monkeypatch.setattr(atomic, "process_tag", lambda: next(tags))
    (tmp_path / ".x.aaaaaaaa_1_h.tmp.json").write_text("")
    assert temp_path_for(tmp_path / "x.json").name == ".x.bbbbbbbb_1_h.tmp.json"


# ---------------------------------------------------------------------------------------
# reruns of the demo
# ---------------------------------------------------------------------------------------
@pytest.mark.slow  # four runs of the demo (the atomic writes: the tests above)
def test_reruns_of_vistest_run_leave_every_file_identical(demo_tiny, tmp_path):
    out = tmp_path / "run"
    cli("run", demo_tiny, QUESTIONS, "-o", out, *FAST)
    first = snapshot(out)
    record = json.loads(first[".vistest/records/demo-seed0.json"][0])
    assert all("mtime_ns" in f for f in record["files"].values()) and "manifest.jsonl" in first
    for _ in range(2):
        cli("run", demo_tiny, QUESTIONS, "-o", out, *FAST)
        assert differences(first, snapshot(out)) == []
    # the control: other questions change the ground truth, and the record with it
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(QUESTIONS.read_text().splitlines(keepends=True)[:-1]))
    cli("run", demo_tiny, questions, "-o", out, *FAST)
    changed = differences(first, snapshot(out))
    assert ".vistest/records/demo-seed0.json: other bytes" in changed
    assert "scenes/demo-seed0/all_frame.jsonl: other bytes" in changed
    assert not any(p.endswith(".mp4: other bytes") for p in changed)  # the videos do not depend on questions


@pytest.mark.slow  # two batches of the demo, each run twice
def test_reruns_of_vistest_batch_leave_every_file_identical(demo_tiny, tmp_path):
    scenes = tmp_path / "scenes"
    demo_batch(demo_tiny, QUESTIONS, scenes, ["demo-a", "demo-b"])
    out = tmp_path / "out"
    cli("batch", scenes, "-o", out, "-j", "2", *FAST)
    first = snapshot(out)
    assert ".vistest/records/demo-a.json" in first and "manifest.jsonl" in first and "index.html" in first
    for _ in range(2):
        cli("batch", scenes, "-o", out, "-j", "2", *FAST)
        assert differences(first, snapshot(out)) == []
