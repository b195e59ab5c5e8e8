"""A text-only adversary for reformulated questions: from a row's question text and options
alone (no video, no base row), does it tell which option was removed (nota-replace) or how the
options were rotated (circular)? Written independently of vistest.reformulate: it learns the
option vocabulary of the whole file (what a blind model trained on the set could learn) and
knows the closed answer spaces of the spatial benchmarks (VSI-Bench / ReVSI direction words).

A row leaks when
* **names what is not offered**: a list in the text (two or more option-like phrases joined by
  ``,`` / ``or`` / ``and``) that overlaps the row's options names a phrase the options lack;
* **rotated**: a list naming exactly option texts in another order than the options';
* **order not offered**: options that are orders of the same labels (appearance order) and a
  list of those labels in the text that is none of the offered orders;
* **closed set**: the offered (non-special) options are a strict subset of a closed answer
  space (the known direction / yes-no spaces, or a type whose every other group offers the same
  set): the missing answer is the complement;
* **ladder gap**: numeric options that form a regular ladder (geometric or arithmetic) with one
  interior rung missing (one step about the square / double of the others).
"""
from __future__ import annotations

import math
import re
from collections import defaultdict

from vistest.questions import is_special_option, option_letter

SEP_RE = re.compile(r"(?:\s*,\s*(?:(?:or|and)\s+)?|\s+(?:or|and)\s+)(?:the\s+)?", re.I)
NUMBER_RE = re.compile(r"^-?\d+(?:\.\d+)?$")
# the closed answer spaces of the spatial benchmarks (VSI-Bench's and ReVSI's direction templates)
KNOWN_CLOSED = (frozenset({"left", "right"}), frozenset({"left", "right", "back"}),
                frozenset({"front-left", "front-right", "back-left", "back-right"}), frozenset({"yes", "no"}))
LADDER_TOL = 0.25  # a step counts as "the same" within 25% of the smallest step's log-ratio


def offered(row: dict) -> list[str]:
    """The row's non-special option texts, lower-cased, in their order."""
    return [option_letter(o)[1].strip().lower() for o in row.get("options") or () if not is_special_option(o)]


def parts(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


class Adversary:
    def __init__(self, rows: list[dict]):
        vocab = set()
        for r in rows:
            for t in offered(r):
                vocab.update(x for x in [t, *parts(t)] if not NUMBER_RE.match(x))
        alts = "|".join(re.escape(v) for v in sorted(vocab, key=len, reverse=True))
        self.term = re.compile(rf"(?<![\w-])({alts})(?![\w-])", re.I) if alts else None
        # per type: group id -> the option set of its base row (closed sets are learned leaving the group out)
        self.base_sets: dict[str, dict[str, frozenset]] = defaultdict(dict)
        for r in rows:
            if r.get("reformulation", "base") == "base" and r.get("options"):
                self.base_sets[r["question_type"]][str(r.get("group_id", r["id"]))] = frozenset(offered(r))

    def lists(self, text: str) -> list[list[str]]:
        """Runs of two or more vocabulary phrases joined only by separators, lower-cased."""
        if self.term is None:
            return []
        out, run, end = [], [], None
        for m in self.term.finditer(text):
            found = parts(m.group(1).lower())  # an order of labels matched whole is a list of its labels
            if run and SEP_RE.fullmatch(text[end:m.start()]):
                run.extend(found)
            else:
                if len(run) > 1:
                    out.append(run)
                run = found
            end = m.end()
        if len(run) > 1:
            out.append(run)
        return out

    def closed_sets(self, row: dict) -> list[frozenset]:
        others = {g: s for g, s in self.base_sets.get(row["question_type"], {}).items()
                  if g != str(row.get("group_id", row["id"]))}
        learned = [next(iter(others.values()))] if len(others) >= 3 and len(set(others.values())) == 1 else []
        return [*KNOWN_CLOSED, *learned]

    def leaks(self, row: dict) -> list[str]:
        """Why this row's text and options reveal a removed or rotated option (empty: no leak)."""
        opts = offered(row)
        if not opts:
            return []
        why = []
        items = set(opts) | {p for t in opts for p in parts(t)}
        labels = {frozenset(parts(t)) for t in opts}
        permutations = len(labels) == 1 and len(next(iter(labels))) > 1
        for words in self.lists(row["question"]):
            if not items & set(words):
                continue  # a list of something else (the objects a numeric question is about)
            absent = [w for w in words if w not in items]
            if absent:
                why.append(f"the text lists {absent} that the options lack")
            elif all(w in opts for w in words):
                pos = [opts.index(w) for w in words]
                if pos != sorted(pos):
                    why.append(f"the text lists {words}, the options are {opts} (rotated)")
            elif permutations and set(words) == next(iter(labels)) and ", ".join(words) not in opts:
                why.append(f"the text lists the order {words}, which no option offers")
        have = frozenset(opts)
        for closed in self.closed_sets(row):
            if have < closed and not any(have <= c < closed for c in self.closed_sets(row) if c != closed):
                why.append(f"the options {sorted(have)} are a closed set missing {sorted(closed - have)}")
                break
        gap = ladder_gap(opts)
        if gap:
            why.append(gap)
        return why


def ladder_gap(opts: list[str]) -> str | None:
    """A regular ladder of numbers with one interior rung missing."""
    vals = []
    for t in opts:
        head = t.split()[0] if t.split() else ""
        if not NUMBER_RE.match(head):
            return None
        vals.append(float(head))
    vals = sorted(vals)
    if len(vals) < 3 or len(set(vals)) < len(vals):
        return None
    for kind, steps in (("geometric", [math.log(b / a) for a, b in zip(vals, vals[1:])] if vals[0] > 0 else None),
                        ("arithmetic", [b - a for a, b in zip(vals, vals[1:])])):
        if not steps:
            continue
        s = min(steps)
        if s <= 1e-9:
            continue
        double = [i for i, x in enumerate(steps) if abs(x - 2 * s) <= LADDER_TOL * s]
        single = [i for i, x in enumerate(steps) if abs(x - s) <= LADDER_TOL * s]
        if len(double) == 1 and len(single) == len(steps) - 1:
            return f"the {kind} ladder {vals} misses one rung (between {vals[double[0]]:g} and {vals[double[0] + 1]:g})"
    return None


def leaking(rows: list[dict]) -> dict[str, list[str]]:
    """Variant id -> why it leaks, over every reformulated (non-base) row of ``rows``."""
    adv = Adversary(rows)
    out = {}
    for r in rows:
        if r.get("reformulation", "base") != "base":
            why = adv.leaks(r)
            if why:
                out[str(r["id"])] = why
    return out
