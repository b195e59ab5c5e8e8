"""Issue #43: the generator on rooms built from real layouts (the boxes and labels of the VSI-Bench
meta info, a camera walk through each), beside the random rooms of the other tests, with the world
prior cross-fitted on the scans that are not rooms.

Independent references: the meta info's own axis-aligned bounds (``min`` / ``max`` of every box)
for the boxes as read; per-label and per-pair median tables computed here straight from the JSON
(numpy medians, every instance) against the world prior's attack on the generated numeric
questions; the answer words counted here for the relative directions."""
from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from direction_words import word_priors
from reference import META_INFO, MISSING

from vistest.answers import mean_relative_accuracy
from vistest.eval import world_prior
from vistest.eval.attacks import fit_world_prior
from vistest.generate import Rules, SceneInput, generate, parse_types
from vistest.generate.blind import truths
from vistest.generate.geometry import box_distance
from vistest.visibility.table import compute_visibility

ROOT = Path(__file__).resolve().parents[1]
META = META_INFO
pytestmark = pytest.mark.skipif(not (META / "scannet_meta_info_val.json").exists(),
                                reason=MISSING)
ROOMS = 24
FRAMES = 40
# the report judged on one fold seed, complements against 1/k: the questions are the same (the pruning
# scores on fold seeds of its own), the fixture a third cheaper
CHEAP_REPORT = ["balance.judge_fold_seeds=1", "balance.null_permutations=0"]


@pytest.fixture(scope="module", params=["unpruned", pytest.param("pruned", marks=pytest.mark.slow)])
def real(request):
    """24 scans as rooms (40-frame walks), the world prior cross-fitted on the other 264, and the set
    of every type generated with that prior active: in the fast tier without the bias pruning (every
    attack still runs on every question, in the report: the crash of issue #43 was an attack's), in
    the slow tier pruned."""
    from vistest.generate.real_rooms import meta_files, read_scans, real_layout_scene, split_scans
    from vistest.generate.prior_tables import derive, world_prior_of

    files = meta_files(META)
    scans = read_scans(files)
    rooms, prior_scans = split_scans(list(scans), ROOMS, seed=3)
    prior = world_prior_of(derive(files, only=set(prior_scans)), "test")
    inputs = []
    for k in rooms:
        scene = real_layout_scene(k, scans[k], num_frames=FRAMES)
        inputs.append(SceneInput(scene, compute_visibility(scene, occlusion="boxes")))
    with world_prior.using(prior):
        rules = Rules().with_overrides(CHEAP_REPORT + (["balance.removal_budget=0"] if request.param == "unpruned"
                                                       else []))
        gen = generate(inputs, parse_types("all"), rules, seed=0)
    return scans, rooms, prior_scans, prior, gen


def _raw_box(b):
    return (np.asarray(b["centroid"], float), np.asarray(b["axesLengths"], float),
            np.asarray(b["normalizedAxes"], float).reshape(3, 3).T)


def test_real_layout_boxes_are_the_meta_infos_boxes(real):
    """Every box of every room: its corners' axis-aligned bounds are the meta info's ``min`` /
    ``max`` (written by VSI-Bench, not read by vistest), its label the meta info's."""
    from vistest.generate.real_rooms import real_layout_scene

    scans, rooms = real[0], real[1]
    for k in rooms:
        scene = real_layout_scene(k, scans[k], num_frames=4)
        raw = [(label, b) for label in sorted(scans[k]["object_bbox"]) for b in scans[k]["object_bbox"][label]]
        assert len(scene.objects) == len(raw)
        for o, (label, b) in zip(scene.objects, raw):
            signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
            corners = o.center + (signs * o.size / 2) @ o.rotation.T
            assert o.label == label.lower()
            np.testing.assert_allclose(corners.min(0), b["min"], atol=2e-3)
            np.testing.assert_allclose(corners.max(0), b["max"], atol=2e-3)
        assert scene.room_area_m2 == pytest.approx(scans[k]["room_size"])


def test_the_prior_is_cross_fitted(real):
    scans, rooms, prior_scans, prior, _ = real
    assert not set(rooms) & set(prior_scans) and len(rooms) + len(prior_scans) == len(scans) == 288
    assert prior.room_m2[1] == len(prior_scans)  # fitted on the other scans only
    assert prior.room_m2[0] == pytest.approx(statistics.median(scans[k]["room_size"] for k in prior_scans), abs=0.05)


def test_generate_all_types_finishes_on_real_rooms(real):
    """Tables and chairs touch in these rooms (the crash of issue #43): the set is made, every
    attack ran (no error noted), and the types real rooms offer are asked."""
    gen = real[4]
    assert not [n for n in gen.report.notes if "attack(s) raised" in n]
    kept = {f.question_type: f.final for f in gen.report.funnel}
    assert sum(kept.values()) >= 60 and len([t for t, n in kept.items() if n]) >= 6, kept
    for t in ("object_counting_single", "object_size_estimation", "room_size_estimation_multiple"):
        assert kept.get(t, 0) >= 10, (t, kept)
    for f in gen.report.funnel:  # the floors: 10 answerable keep 10, 100 keep 20
        assert f.final >= (20 if f.answerable >= 100 else 10 if f.answerable >= 10 else 0), f
    assert sum(f.final for f in gen.report.funnel) >= 0.6 * sum(f.drawn for f in gen.report.funnel)


def _tables(scans, keys):
    """Per-label median longest side (cm), per-pair median closest-point distance (m, scans with
    both labels once) and the median room area, from the JSON of ``keys`` (every instance)."""
    sizes, pairs, rooms = defaultdict(list), defaultdict(list), []
    for k in keys:
        scan = scans[k]
        rooms.append(scan["room_size"])
        once = {}
        for label, boxes in scan["object_bbox"].items():
            sizes[label.lower()] += [100 * max(b["axesLengths"]) for b in boxes]
            if len(boxes) == 1:
                once[label.lower()] = _raw_box(boxes[0])
        names = sorted(once)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                pairs[(a, b)].append(box_distance(once[a], once[b]))
    return ({k: float(np.median(v)) for k, v in sizes.items()}, {k: float(np.median(v)) for k, v in pairs.items()},
            float(np.median(rooms)), float(np.median([d for v in pairs.values() for d in v])))


def test_world_prior_is_as_strong_as_a_per_label_median_table(real):
    """Side by side on every numeric type of the real rooms (open answers: MRA; numeric options:
    accuracy of the option nearest the guess in ratio): the world prior's attack (cross-fitted)
    against a per-label / per-pair median table computed here on the same prior scans (every
    label, however rare; unknown: the median over every instance / pair). The cross-fitted prior
    holds the same medians at full precision (vistest.generate.prior_tables.world_prior_of; the
    committed module rounds them): the world prior may not score half a point below the table."""
    scans, _, prior_scans, prior, gen = real
    size_t, pair_t, room_t, any_d = _tables(scans, prior_scans)
    every_size = float(np.median([100 * max(b["axesLengths"]) for k in prior_scans
                                  for bs in scans[k]["object_bbox"].values() for b in bs]))
    records = [r for recs in gen.questions.values() for r in recs]
    rows = {r["id"]: t for r, t in zip(records, truths(records))}
    asked = {r["question_type"] for r in records}
    numeric = [t for t in ("object_size_estimation", "object_abs_distance", "room_size_estimation_multiple")
               if t in asked]
    assert len(numeric) == 3 and {f"{t}_mcq" for t in numeric} - {"room_size_estimation_multiple_mcq"} <= asked
    with world_prior.using(prior):
        answer = fit_world_prior([])
        for qtype in numeric + ["object_size_estimation_mcq", "object_abs_distance_mcq", "room_size_estimation_mcq"]:
            rs = [r for r in records if r["question_type"] == qtype]
            assert len(rs) >= 5, qtype
            world, table = [], []
            for r in rs:
                if qtype.startswith("object_size"):
                    guess = size_t.get(r["object_label"], every_size)
                elif qtype.startswith("object_abs_distance"):
                    guess = pair_t.get(tuple(sorted(question_labels(r))), any_d)
                else:
                    guess = room_t
                got = answer(rows[r["id"]])
                if qtype.endswith("_mcq"):
                    values = [float(o.split(". ", 1)[1]) for o in r["options"]]
                    near = min(range(len(values)), key=lambda i: (abs(np.log(values[i] / guess)) if guess > 0
                                                                  else abs(values[i] - guess), i))
                    table.append(float("ABCDE"[near] == r["ground_truth"]))
                    world.append(float(got == r["ground_truth"]))
                else:
                    gt = float(r["ground_truth"])
                    table.append(mean_relative_accuracy(guess, gt))
                    world.append(mean_relative_accuracy(float(got), gt))
            assert np.mean(world) >= np.mean(table) - 0.005, (qtype, np.mean(world), np.mean(table))


def question_labels(r):
    """The two labels of an absolute-distance question, from its words."""
    a, b = r["question"].split("between the ", 1)[1].split(" (in meters)")[0].split(" and the ")
    return a, b


def test_direction_word_priors_held_out(real):
    """The answer words of every relative-direction type of >= 40 questions, counted here and held
    out by scene (tests/direction_words.py): neither 'always the most frequent word elsewhere' nor
    'never the rarest' more than 5 points above 1/k. The real layouts' rooms hold few objects of
    unique labels 1.5 m apart (the meta info boxes VSI-Bench's categories only: a median of 6 boxes
    a scan), so their direction types stay small (docs/generate.md, measured); the 40 random rooms
    of tests/test_generate.py (slow tier) reach 40."""
    records = [r for recs in real[4].questions.values() for r in recs]
    for qtype, (n, always, never, words) in word_priors(records).items():
        if n >= 40:
            assert always <= 0.05 and never <= 0.05, (qtype, words)
