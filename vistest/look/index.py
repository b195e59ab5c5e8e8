"""``index.html`` of a run folder: one static page linking everything a run wrote.

``vistest index RUN_DIR`` writes ``RUN_DIR/index.html`` (plain HTML and inline CSS, no
script, relative links: it opens from disk, no server). It opens with a **summary**
(vistest.look.summary): per budget the questions kept / changed / unanswerable, per dummy mode
its rows that have a video and the scored model's hallucination rate over them, and the warnings
ranked: errors (a failed audit, no pose at all), what changes answers (frames without a pose),
then the videos' sampling notes collapsed in a ``<details>``, one line per kind of note. Then per scene (the scene ids
of ``manifest.jsonl`` and of ``scenes/*/``):

* **pictures**: every PNG under ``scenes/{scene_id}/`` (the timeline and overlay sheet
  ``make demo`` puts there, score plots), shown and linked; score plots (a PNG beside a
  ``report.json``) at their own size, so their labels stay as readable as in the file;
* **files**: every other file under ``scenes/{scene_id}/`` (budget and dummy ground truth,
  visibility, overlay video, score reports), linked;
* **videos**: a table of the scene's ``manifest.jsonl`` lines (path, kind, budget / mode,
  frames, questions, notes), each with its contact sheet from ``SHEETS/{path}.png``
  (``vistest sheet``) when there is one. A video's notes are given by number (``note 2``, the
  full text on hover); the notes themselves are listed once above the table, one line per kind.

Then every other file at the top of the run folder (``manifest.jsonl``...). Hidden files
and folders (``.manifest.lock``, ``.vistest/``) are left out. The page is rewritten
atomically and is the same for the same folder contents (no timestamps).
"""
from __future__ import annotations

import html
import os
from collections import Counter
from pathlib import Path
from urllib.parse import quote

from .. import layout
from ..atomic import write_atomic
from ..budget.truth import STATUSES, UNKNOWN
from ..errors import InputError
from ..budgets import budget_sort_key
from ..videos.manifest import read_manifest
from .per_question import (NOT_DRAWN, budget_rows, dummy_rows, named, object_labels, picture_path,
                           question_objects)
from .summary import SceneSummary, collapse_notes, note_kind, scene_summary

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
h1{font-size:1.4em}h2{border-bottom:1px solid #ccc;margin-top:1.6em}h3{font-size:1em;margin-bottom:.3em}
.pics{display:flex;flex-wrap:wrap;gap:12px}.pics figure{margin:0}.pics img{max-width:640px;max-height:420px;
border:1px solid #ccc}figcaption{font-size:.85em}table{border-collapse:collapse;font-size:.85em}
td,th{border:1px solid #ddd;padding:3px 6px;vertical-align:top;text-align:left}td img{width:240px}
.warn{color:#a40}code{font-size:.95em}
.summary{background:#f6f6f2;border:1px solid #ddd;padding:.6em 1em;margin:1em 0}.summary h2{margin-top:.2em;
border:0}.summary table{margin:.3em 1.5em .6em 0;display:inline-table;vertical-align:top}.summary td.n{text-align:right}
.summary ul{margin:.3em 0;padding-left:1.2em}.ok{color:#070}.fail{color:#b00;font-weight:bold}
.pics img.plot{max-width:100%;max-height:none}
.st{font-weight:bold}.st-kept{color:#070}.st-changed{color:#a40}.st-unanswerable{color:#b00}.st-unknown{color:#555}
td small{color:#555}table.questions td{max-width:28em}details.q{margin:.4em 0;border:1px solid #ddd;padding:.3em .6em}
details.q summary{cursor:pointer}.strips{display:flex;flex-wrap:wrap;gap:10px;align-items:flex-start}
.strips figure{margin:0}.strips img{max-width:100%;border:1px solid #ccc}
"""


def _href(path: Path, base: Path) -> str:
    """URL of ``path`` relative to ``base`` (percent-encoded, '/'-separated)."""
    return quote(Path(os.path.relpath(path, base)).as_posix())


def _visible_files(folder: Path) -> list[Path]:
    """Files under ``folder`` (recursive, sorted), skipping hidden files and folders."""
    if not folder.is_dir():
        return []
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        out += [Path(root) / f for f in sorted(files) if not f.startswith(".")]
    return out


def _manifest(run_dir: Path) -> list[dict]:
    if not layout.manifest_path(run_dir).is_file():
        return []
    return read_manifest(run_dir)


def _link(path: Path, base: Path, text: str | None = None) -> str:
    return f'<a href="{_href(path, base)}">{html.escape(text or Path(os.path.relpath(path, base)).as_posix())}</a>'


def _pct(a: int, n: int) -> str:
    return f"{a / n:.0%}" if n else "-"


def _summary_html(summaries: list[SceneSummary], recs: list[dict], run_dir: Path,
                  collapsed: list[tuple]) -> str:
    """The summary section (module docstring): totals over the scenes, then the warnings."""
    budgets: dict[str, Counter] = {}
    dummies: dict[str, Counter] = {}
    no_video: Counter = Counter()
    halluc: dict[str, list[int]] = {}
    for s in summaries:
        no_video.update(s.no_video)
        for m in s.no_video:
            dummies.setdefault(m, Counter())
        for b, c in s.budgets.items():
            budgets.setdefault(b, Counter()).update(c)
        for m, c in s.dummies.items():
            dummies.setdefault(m, Counter()).update(c)
        for m, (h, n) in s.hallucination.items():
            acc = halluc.setdefault(m, [0, 0])
            acc[0] += h
            acc[1] += n
    many = len(summaries) > 1
    out = ['<section class="summary" id="summary"><h2>Summary</h2>']
    if budgets:
        shown = [st for st in STATUSES if st != UNKNOWN or any(c.get(UNKNOWN) for c in budgets.values())]
        rows = ["<tr><th>budget</th><th>questions</th>" + "".join(f"<th>{st}</th>" for st in shown) + "</tr>"]
        for b in sorted(budgets, key=budget_sort_key):
            c = budgets[b]
            n = sum(c.values())
            rows.append(f"<tr><td>{html.escape(b if b == 'all' else b + ' frames')}</td><td class=n>{n}</td>" + "".join(
                f"<td class=n>{c[st]} ({_pct(c[st], n)})</td>" for st in shown) + "</tr>")
        out.append("<table><caption>Questions per budget: does the budget's ground truth keep the all-frame answer?"
                   + (f" ({len(summaries)} scenes)" if many else "")
                   + "</caption>" + "".join(rows) + "</table>")
    if dummies:
        scored = any(s.score_report for s in summaries)
        rows = ["<tr><th>dummy mode</th><th>rows with a video</th><th>unanswerable</th><th>changed</th>"
                "<th>hallucination</th><th>rows without a video</th></tr>"]
        for m in sorted(dummies):
            c = dummies[m]
            h = halluc.get(m)
            cell = (f"{h[0]} of {h[1]} ({_pct(h[0], h[1])})" if h else "no row with a video" if not c
                    else "not scored" if scored else "no score yet")
            rows.append(f"<tr><td>{html.escape(m)}</td><td class=n>{sum(c.values())}</td>"
                        f"<td class=n>{c['unanswerable']}</td><td class=n>{c['changed']}</td><td>{cell}</td>"
                        f"<td class=n>{no_video[m]}</td></tr>")
        reports = [s.score_report for s in summaries if s.score_report]
        src = ("from " + ", ".join(_link(p, run_dir) for p in reports[:3]) + (" ..." if len(reports) > 3 else "")
               if reports else "<code>vistest score</code> adds it")
        out.append("<table><caption>Dummies per mode, over the rows that have a video (hallucination: the scored "
                   f"model answers although the frames hold no evidence; {src}; a row whose dummy has no frame "
                   "left has no video, exports leave it out)</caption>" + "".join(rows) + "</table>")
    out.append(_warnings_html(summaries, recs, run_dir, collapsed))
    out.append("</section>")
    return "\n".join(out)


def _warnings_html(summaries: list[SceneSummary], recs: list[dict], run_dir: Path, collapsed: list[tuple]) -> str:
    """The warnings, ranked: errors (an audit that fails, no pose at all), then what changes answers
    (frames without a pose), then the audits that pass, then the videos' sampling notes collapsed
    (``<details>``: one line per kind, each with how many videos carry it; the video tables link to them)."""
    many = len(summaries) > 1
    errors, answers, passed = [], [], []
    for s in summaries:
        who = f"{html.escape(s.scene_id)}: " if many else ""
        if s.audit is not None:
            ok, message, path = s.audit
            verdict = '<span class="ok">PASS</span>' if ok else '<span class="fail">FAIL</span>'
            line = f"{who}audit {verdict}: {html.escape(message)} ({_link(path, run_dir, path.name)})"
            (passed if ok else errors).append(f"<li>{line}</li>")
        errors += [f'<li class="fail">{who}{html.escape(w)}</li>' for w in s.errors]
        answers += [f'<li class="warn">{who}{html.escape(w)}</li>' for w in s.warnings]
    limit = 12  # scene lines; a batch of many scenes keeps the summary short
    out = []
    for title, items in (("Errors", errors), ("Changes answers", answers), ("Audit", passed)):
        if items:
            more = [f"<li>... and {len(items) - limit} more</li>"] if len(items) > limit else []
            out.append(f"<h3>{title}</h3><ul>" + "".join(items[:limit] + more) + "</ul>")
    notes = []
    for i, (_kind, first, n, path) in enumerate(collapsed, 1):  # every kind: the video tables link here
        others = f"{n} of {len(recs)} videos" + (f", e.g. {html.escape(path)}" if n > 1 else f": {html.escape(path)}")
        notes.append(f'<li id="note-{i}">note {i}: {html.escape(first)} ({others}'
                     + ("; the others differ in numbers only" if n > 1 else "") + ")</li>")
    if notes:
        out.append(f"<details><summary>Notes: {len(notes)} kind(s) of note on how evaluators sample the videos "
                   "(routine; each evaluator's own ground truth already follows the frames it takes)</summary><ul>"
                   + "".join(notes) + "</ul></details>")
    return "".join(out) if out else "<p>No warnings.</p>"


def _status(row: dict | None) -> str:
    st = str(row.get("status")) if row else "-"
    return f'<span class="st st-{html.escape(st)}">{html.escape(st)}</span>'


def _questions_html(run_dir: Path, sid: str, labels: dict[str, str]) -> str:
    """The scene's questions: a table with a row per question (its status at each budget, the budget's
    answer where it differs, the reason in words where the answer does not stand, each dummy's answer)
    and, below it, a collapsed section per question with the pictures of vistest.look.per_question.
    ``labels``: {object id: label} (vistest.look.per_question.object_labels)."""
    budgets = budget_rows(run_dir, sid)
    if not budgets:
        return ""
    dummies = dummy_rows(run_dir, sid)
    qids = list(dict.fromkeys(q for rows in budgets.values() for q in rows))
    shown = list(budgets)
    head = ("<tr><th>question</th><th>type</th><th>objects</th><th>answer (all frames)</th>"
            + "".join(f"<th>{html.escape(b if b == 'all' else b + ' frames')}</th>" for b in shown)
            + "<th>dummies (answer: modes at budgets)</th></tr>")
    rows, details = [head], []
    for qid in qids:
        first = next(rows_[qid] for rows_ in budgets.values() if qid in rows_)
        anchor = html.escape(quote(f"q-{sid}-{qid}"))
        objs = named(question_objects(first, labels), labels)
        original = first.get("original_ground_truth", first.get("ground_truth"))
        cells = []
        for b in shown:
            r = budgets[b].get(qid)
            if r is None:
                cells.append("<td>-</td>")
                continue
            answer = "" if str(r.get("ground_truth")) == str(original) or r.get("ground_truth") is None else \
                f" &rarr; {html.escape(str(r.get('ground_truth')))}"
            reason = html.escape(str(r.get("reason_text") or r.get("reason") or ""))
            words = f"<br><small>{reason}</small>" if r.get("status") != "kept" and reason else ""
            cells.append(f'<td title="{reason}">{_status(r)}{answer}{words}</td>')
        by_answer: dict[str, list[dict]] = {}
        for d in dummies.get(qid, []):
            by_answer.setdefault(str(d.get("ground_truth")), []).append(d)
        dums = "<br>".join(
            f"{html.escape(a)}: " + html.escape(", ".join(dict.fromkeys(str(d.get("dummy_mode")) for d in ds)))
            + " at " + html.escape(", ".join(dict.fromkeys(str(d.get("num_frames")) for d in ds)))
            + (f" ({sum(not d.get('video') for d in ds)} without a video)" if any(not d.get("video") for d in ds)
               else "") for a, ds in by_answer.items())
        rows.append(f'<tr id="row-{anchor}"><td><a href="#{anchor}">{html.escape(qid)}</a>: '
                    f"{html.escape(str(first.get('question', '')))}</td>"
                    f"<td>{html.escape(str(first.get('question_type', '')))}</td><td>{html.escape(objs)}</td>"
                    f"<td>{html.escape(str(original))}</td>" + "".join(cells) + f"<td><small>{dums}</small></td></tr>")
        details.append(_question_details(run_dir, sid, qid, anchor, budgets, dummies.get(qid, []), labels))
    return (f"<h3>Questions ({len(qids)})</h3>"
            '<table class="questions" id="questions-' + html.escape(quote(sid)) + '">' + "".join(rows) + "</table>"
            + "<h3>Per question: the frames</h3>" + "".join(details))


def _question_details(run_dir: Path, sid: str, qid: str, anchor: str, budgets: dict, dummies: list[dict],
                      labels: dict[str, str]) -> str:
    """One question's collapsed section: per budget its status, answer and reason, the sampled frames
    (evidence boxes drawn) and the dummies' frames beside them."""
    first = next(rows_[qid] for rows_ in budgets.values() if qid in rows_)
    out = [f'<details class="q" id="{anchor}"><summary><b>{html.escape(qid)}</b>: '
           f"{html.escape(str(first.get('question', '')))}</summary>",
           f"<p>Objects: {html.escape(named(question_objects(first, labels), labels)) or '-'}; answer over all "
           f"frames: {html.escape(str(first.get('original_ground_truth', first.get('ground_truth'))))}</p>"]
    for b, rows in budgets.items():
        r = rows.get(qid)
        if r is None:
            continue
        out.append(f"<h4>{html.escape(b if b == 'all' else b + ' frames')}: {_status(r)}, answer "
                   f"{html.escape(str(r.get('ground_truth')))}</h4><p>{html.escape(str(r.get('reason_text') or ''))}"
                   "</p>")
        figs = []
        pic = picture_path(run_dir, sid, qid, b)
        if pic.is_file():
            figs.append(f'<figure><img src="{_href(pic, run_dir)}" alt="{html.escape(qid)} at {html.escape(b)}" '
                        'loading="lazy"><figcaption>the sampled frames, the evidence boxes drawn'
                        "</figcaption></figure>")
        for d in dummies:
            if str(d.get("num_frames")) != b:
                continue
            mode = str(d.get("dummy_mode"))
            pic = picture_path(run_dir, sid, qid, b, mode)
            text = (f"dummy {html.escape(mode)}: answer {html.escape(str(d.get('ground_truth')))} "
                    f"({html.escape(str(d.get('status')))}), "
                    + ("every frame black" if mode in NOT_DRAWN else
                       f"removes {html.escape(named(d.get('removed_objects') or [], labels)) or 'nothing'}")
                    + ("" if d.get("video") else "; no frame left, no video"))
            figs.append(f'<figure><img src="{_href(pic, run_dir)}" alt="dummy {html.escape(mode)}" loading="lazy">'
                        f"<figcaption>{text}</figcaption></figure>" if pic.is_file() else
                        f"<figure><figcaption>{text}</figcaption></figure>")
        if figs:
            out.append('<div class="strips">' + "".join(figs) + "</div>")
    out.append("</details>")
    return "".join(out)


def _video_rows(recs: list[dict], run_dir: Path, sheets_dir: Path, notes: dict[str, int] | None = None,
                labels: dict[str, str] | None = None) -> str:
    rows = ["<tr><th>video</th><th>kind</th><th>frames</th><th>questions</th><th>contact sheet</th></tr>"]
    for r in recs:
        video = run_dir / r["path"]
        cell = _link(video, run_dir) if video.is_file() else f"{html.escape(r['path'])} (missing)"
        kind = r["variant"] + (f" {r['budget']}" if r.get("budget") is not None else "") + \
            (f" ({r['profile']})" if r.get("profile") else "") + (f" {r['mode']}" if r.get("mode") else "") + \
            (f" fill {r['fill']}" if r.get("fill") else "")
        if r.get("objects"):
            kind += f"<br>removes {html.escape(named(r['objects'], labels or {}))}"
        nums = sorted({(notes or {}).get(note_kind(str(w)), 0): str(w) for w in r.get("warnings", [])}.items())
        warns = "".join(f'<br><a class="warn" href="#note-{i}" title="{html.escape(w)}">note {i}</a>' if i else
                        f'<br><span class="warn">{html.escape(w)}</span>' for i, w in nums)
        sheet = sheets_dir / Path(r["path"]).with_suffix(".png")
        thumb = f'<a href="{_href(sheet, run_dir)}"><img src="{_href(sheet, run_dir)}" alt="contact sheet"></a>' \
            if sheet.is_file() else ""
        qs = ", ".join(map(str, r.get("questions", [])))
        rows.append(f"<tr><td>{cell}{warns}</td><td>{html.escape(kind) if '<br>' not in kind else kind}</td>"
                    f"<td>{r['num_frames']} @ {r.get('fps', '?')} fps</td><td>{html.escape(qs)}</td>"
                    f"<td>{thumb}</td></tr>")
    return "<table>" + "".join(rows) + "</table>"


def index_html(run_dir: str | os.PathLike, sheets_dir: str | os.PathLike | None = None,
               title: str | None = None) -> str:
    """The page for ``run_dir`` (see the module docstring); ``sheets_dir`` defaults to ``RUN_DIR/sheets``."""
    run_dir = Path(run_dir).resolve()
    sheets_dir = layout.sheets_dir(run_dir) if sheets_dir is None else Path(sheets_dir).resolve()
    recs = _manifest(run_dir)
    scene_ids = sorted({r["scene_id"] for r in recs} | {p.name for p in layout.scene_dirs(run_dir)})
    # named by its scenes, not its folder: the same run gives the same page wherever it lives
    title = title or "vistest run: " + (", ".join(scene_ids) or run_dir.name)
    parts = [f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
             f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>",
             "<p>Everything this run wrote. First the summary; then per scene every question with its status at "
             "each budget and the reason in words (open a question for the frames each budget samples, its "
             "objects' evidence boxes drawn, and its dummies' frames beside them), the pictures (timeline, "
             "overlay, score plots, when written), the ground-truth files, and every video with its contact "
             "sheet when <code>vistest sheet</code> or <code>vistest run --sheets</code> drew them (each frame "
             "captioned with the source frame it was made from; <code>ok</code> = it matches the source, or "
             "black, as the manifest says).</p>"]
    collapsed = collapse_notes(recs)
    notes = {kind: i for i, (kind, *_rest) in enumerate(collapsed, 1)}
    parts.append(_summary_html([scene_summary(run_dir, sid) for sid in scene_ids], recs, run_dir, collapsed))
    if scene_ids:
        parts.append("<p>Scenes: " + ", ".join(f'<a href="#scene-{quote(s)}">{html.escape(s)}</a>'
                                                 for s in scene_ids) + "</p>")
    for sid in scene_ids:
        parts.append(f'<h2 id="scene-{html.escape(quote(sid))}">{html.escape(sid)}</h2>')
        drill = layout.scene_dir(run_dir, sid) / layout.QUESTIONS_DIR  # shown per question, not listed
        files = [f for f in _visible_files(layout.scene_dir(run_dir, sid)) if drill not in f.parents]
        pics = [f for f in files if f.suffix.lower() == ".png"]
        others = [f for f in files if f.suffix.lower() != ".png"]
        labels = object_labels(run_dir, sid)  # the scene file read once for the page
        parts.append(_questions_html(run_dir, sid, labels))
        if pics:
            parts.append("<h3>Pictures</h3><div class=\"pics\">" + "".join(
                f'<figure><a href="{_href(p, run_dir)}"><img src="{_href(p, run_dir)}"'
                + (' class="plot"' if (p.parent / "report.json").is_file() else "")
                + f' alt="{html.escape(p.name)}"></a><figcaption>{html.escape(p.relative_to(run_dir).as_posix())}'
                f"</figcaption></figure>" for p in pics) + "</div>")
        if others:
            parts.append(f"<details><summary><b>Files ({len(others)})</b>: ground truth per budget, dummies, "
                         "visibility, each evaluator's own ground truth</summary><ul>"
                         + "".join(f"<li>{_link(f, run_dir)}</li>" for f in others) + "</ul></details>")
        mine = [r for r in recs if r["scene_id"] == sid]
        if mine:
            parts.append(f"<h3>Videos ({len(mine)})</h3>" + _video_rows(mine, run_dir, sheets_dir, notes, labels))
    top = [p for p in sorted(run_dir.iterdir()) if p.is_file() and not p.name.startswith(".")
           and p.name != layout.INDEX_HTML]
    if top:
        parts.append("<h2>Run folder</h2><ul>" + "".join(f"<li>{_link(p, run_dir)}</li>" for p in top) + "</ul>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_index(run_dir: str | os.PathLike, sheets_dir: str | os.PathLike | None = None,
                title: str | None = None) -> Path:
    """Write ``RUN_DIR/index.html`` atomically; returns its path."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError(f"{run_dir}: not a folder; expected the output folder of 'vistest run'")
    path = run_dir / layout.INDEX_HTML
    write_atomic(path, index_html(run_dir, sheets_dir, title))
    return path


def links(page: str) -> list[str]:
    """Every ``href`` and ``src`` of an HTML page, unescaped, in order (for checks)."""
    from html.parser import HTMLParser

    found: list[str] = []

    class _P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.extend(v for k, v in attrs if k in ("href", "src") and v is not None)

    _P().feed(page)
    return found


