"""The held-out answer-word priors of the relative directions, counted from question records alone
(issue #43: "no relative-direction type with a held-out word prior above chance + 5 on >= 40
questions"), independently of the report's attacks: per type, leave one scene out, "always the word
most frequent in the other scenes" and "never the word rarest there" (uniform over the other
options), each against 1/k. A set whose rooms offer no "back" teaches "never back"."""
from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

DIRECTION = "object_rel_direction_"


def answer_word(r: dict) -> str:
    """The text of the correct option (``"B. back"`` -> ``back``)."""
    return dict(o.split(". ", 1) for o in r["options"])[r["ground_truth"]]


def word_priors(records: list[dict]) -> dict[str, tuple[int, float, float, Counter]]:
    """Per relative-direction type: (questions, 'always the most frequent' gap, 'never the rarest'
    gap, the answer words), gaps held out by scene, in points / 100 above 1/k."""
    by: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        if r["question_type"].startswith(DIRECTION):
            by[r["question_type"]].append(r)
    out = {}
    for qtype, rs in sorted(by.items()):
        words = [answer_word(r) for r in rs]
        k = len(rs[0]["options"])
        offered = sorted({o.split(". ", 1)[1] for r in rs for o in r["options"]})
        always, never = [], []
        for s in sorted({r["scene_id"] for r in rs}):
            train = Counter(w for r, w in zip(rs, words) if r["scene_id"] != s)
            top = min(offered, key=lambda w: (-train[w], w))
            rare = min(offered, key=lambda w: (train[w], w))
            for r, w in zip(rs, words):
                if r["scene_id"] == s:
                    always.append(float(w == top))
                    never.append(0.0 if w == rare else 1.0 / (k - 1))
        out[qtype] = (len(rs), float(np.mean(always)) - 1 / k, float(np.mean(never)) - 1 / k, Counter(words))
    return out
