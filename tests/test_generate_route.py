"""Route planning (vistest.generate.route): an analytic room whose answer is worked out by hand,
and on random rooms every route checked by independent geometry: the polyline stays on free floor
(each blocking footprint and each wall at least the clearance away, by point-in-rectangle tests in
the box frames), is no longer than the shortest path a visibility graph over the grown footprints
finds (+ grid slack), each turn word follows from atan2 of the legs, each landmark is the object
nearest its turning point; the options vary only left/right and the text names no turn."""
from __future__ import annotations

import dataclasses
import heapq
import json
import math

import numpy as np
import pytest

from vistest.synthetic import random_room_scene
from vistest.generate import Rules, SceneInput, generate, route
from vistest.generate.candidates import scene_rng
from vistest.generate.facts import SceneFacts
from vistest.questions import option_letter, parse_questions
from vistest.scene import FORMAT, Scene
from vistest.visibility.table import Visibility, compute_visibility

# the random rooms are cluttered (boxes 5 cm apart): a narrower walker and nearer landmarks find routes there
RULES = dataclasses.replace(Rules().route, max_per_scene=0, clearance_m=0.15, landmark_margin_m=0.2)


def all_seen(scene: Scene) -> Visibility:
    """A table in which every object is seen in frame 0."""
    o = len(scene.objects)
    f = len(scene.frames)
    vis = np.zeros((f, o))
    vis[0] = 0.5
    return Visibility(scene.scene_id, vis.copy(), vis, np.zeros((f, o, 4)), np.array([x.id for x in scene.objects]),
                      np.array([fr.index for fr in scene.frames], np.int64), np.ones(f, bool), {})


def box(i, label, x, y, sx, sy, sz):
    return {"id": str(i), "label": label, "center": [x, y, sz / 2], "size": [sx, sy, sz],
            "rotation": np.eye(3).tolist()}


def l_room() -> Scene:
    """8 x 6 m; a wardrobe block fills the lower right ([2.5, 8] x [0, 4]); the sofa at (1, 1),
    the tv to its right at (2, 1), the bed in the upper right at (6, 5.2). From the sofa facing
    the tv, the bed is reached by turning left (up the free strip on the left), then right at
    the wardrobe's upper-left corner."""
    objects = [box(0, "sofa", 1.0, 1.0, 0.4, 0.4, 0.8), box(1, "tv", 2.0, 1.0, 0.3, 0.3, 0.6),
               box(2, "wardrobe", 5.25, 2.0, 5.5, 4.0, 2.0), box(3, "bed", 6.0, 5.2, 1.0, 0.6, 0.5)]
    pose = np.eye(4)
    doc = {"format": FORMAT, "scene_id": "lroom", "fps": 10.0, "image_size": [64, 48],
           "camera": {"fx": 50.0, "fy": 50.0, "cx": 31.5, "cy": 23.5},
           "room": {"polygon": [[0, 0], [8, 0], [8, 6], [0, 6]], "area_type": "single_room"},
           "frames": [{"index": 0, "time": 0.0, "camera_to_world": pose.tolist()}], "objects": objects}
    return Scene.from_dict(doc)


def test_analytic_room_turns_left_then_right():
    scene = l_room()
    facts = SceneFacts(scene, all_seen(scene), 0.05)
    cands = route.candidates(facts, RULES, scene_rng(0, "lroom"))
    by = {(c.fields[0][1], c.fields[1][1], c.fields[2][1]): c for c in cands}
    c = by[("sofa", "tv", "bed")]
    assert c.answer == "Turn Left, Turn Right"
    q = c.template.format(**dict(c.fields))
    assert q.startswith("You are a robot beginning at the sofa facing the tv. You want to navigate to the bed.")
    assert "1. [please fill in] 2. Go forward until the wardrobe 3. [please fill in] 4. Go forward until the bed." in q
    assert q.endswith("You have reached the final destination.")
    assert sorted((c.answer,) + c.distractors) == sorted(
        ["Turn Left, Turn Left", "Turn Left, Turn Right", "Turn Right, Turn Left", "Turn Right, Turn Right"])
    # facing the wardrobe instead (it is ahead-right of the sofa: (5.25, 2) - (1, 1)) the first turn is
    # still a left one; from the bed to the sofa the walk mirrors: facing the tv from the bed...
    assert all(x.answer.count(",") >= 1 for x in cands)


# ---- independent geometry on random rooms ---------------------------------------------------------
def rect_distance(p, o):
    """Distance from floor points p (N, 2) to an upright box's footprint (0 inside), in its frame."""
    r = o.rotation[:2, :2]
    local = (np.asarray(p) - o.center[:2]) @ r
    half = o.size[:2] / 2
    return np.linalg.norm(local - np.clip(local, -half, half), axis=1)


def blocking(scene, start):
    """The boxes on the floor (bottom within 0.5 m of the lowest, top above 0.1 m) but the one the
    walk starts at."""
    floor = min(o.center[2] - o.size[2] / 2 for o in scene.objects)
    return [o for o in scene.objects if o.center[2] - o.size[2] / 2 - floor <= RULES.obstacle_max_bottom_m
            and o.center[2] + o.size[2] / 2 - floor >= RULES.obstacle_min_top_m and o.id != start]


def segment_points(pts, step=0.02):
    out = []
    for a, b in zip(pts[:-1], pts[1:]):
        n = max(2, int(np.linalg.norm(b - a) / step) + 1)
        out.append(a + (b - a) * np.linspace(0, 1, n)[:, None])
    return np.concatenate(out)


def visibility_graph_length(scene, start, s, t, clearance):
    """Shortest collision-free length from s to t: Dijkstra over the corners of the footprints grown
    by ``clearance`` (a polygon's shortest paths bend only at obstacle corners)."""
    obs = blocking(scene, start)
    nodes = [np.asarray(s), np.asarray(t)]
    for o in obs:
        r = o.rotation[:2, :2]
        for sx in (-1, 1):
            for sy in (-1, 1):
                nodes.append(o.center[:2] + r @ (np.array([sx, sy]) * (o.size[:2] / 2 + clearance * 1.0001)))
    w, d = np.max(scene.room["polygon"], axis=0)

    def free(a, b):
        p = segment_points([a, b], 0.02)
        if (p < clearance - 1e-6).any() or (p > np.array([w, d]) - clearance + 1e-6).any():
            return False
        return all((rect_distance(p, o) >= clearance - 0.02).all() for o in obs)

    dist = {0: 0.0}
    heap = [(0.0, 0)]
    while heap:
        dd, i = heapq.heappop(heap)
        if i == 1:
            return dd
        if dd > dist[i]:
            continue
        for j in range(len(nodes)):
            if j != i and free(nodes[i], nodes[j]):
                nd = dd + float(np.linalg.norm(nodes[j] - nodes[i]))
                if nd < dist.get(j, math.inf):
                    dist[j] = nd
                    heapq.heappush(heap, (nd, j))
    return math.inf


def turn(prev, nxt):
    """Signed degrees from heading ``prev`` to ``nxt``, left positive (atan2, +Z up)."""
    a = math.degrees(math.atan2(nxt[1], nxt[0]) - math.atan2(prev[1], prev[0]))
    return (a + 180.0) % 360.0 - 180.0


def word(a):
    if abs(a) >= RULES.back_turn_deg + RULES.min_angle_from_boundary_deg:
        return "Turn Back"
    assert RULES.min_angle_from_boundary_deg <= abs(a) <= RULES.back_turn_deg - RULES.min_angle_from_boundary_deg
    return "Turn Left" if a > 0 else "Turn Right"


@pytest.fixture(scope="module")
def rooms():
    scenes = [random_room_scene(seed, num_frames=60) for seed in range(30)]
    return [SceneInput(s, compute_visibility(s)) for s in scenes]


@pytest.mark.slow
def test_every_route_on_30_random_rooms_checked_by_independent_geometry(rooms):
    n = 0
    for inp in rooms:
        scene = inp.scene
        facts = SceneFacts(scene, inp.visibility, 0.05)
        obj = {o.id: o for o in scene.objects}
        for c in route.candidates(facts, RULES, scene_rng(0, scene.scene_id)):
            n += 1
            d = c.detail
            k = len(d) // 2
            pts = np.array([[d[i][1], d[k + i][1]] for i in range(k)])
            a, b, g, *marks = (obj[i] for i in c.objects)
            # on free floor, inside the room
            p = segment_points(pts)
            w, dd = np.max(scene.room["polygon"], axis=0)
            slack = RULES.cell_m  # the grid's resolution
            assert (p > RULES.clearance_m - slack).all() and (p[:, 0] < w - RULES.clearance_m + slack).all()
            assert (p[:, 1] < dd - RULES.clearance_m + slack).all()
            for o in blocking(scene, a.id):
                assert (rect_distance(p, o) > RULES.clearance_m - slack).all(), (c, o.label)
            # a shortest path: no longer than the visibility graph's (+ the grid's slack)
            best = visibility_graph_length(scene, a.id, pts[0], pts[-1], RULES.clearance_m - slack)
            length = float(np.linalg.norm(np.diff(pts, axis=0), axis=1).sum())
            assert length <= best * 1.08 + 2 * slack, (length, best)
            # the turns, from atan2 of the legs (the first from A's centre towards B's centre)
            legs = np.diff(pts, axis=0)
            words = []
            first = turn(b.center[:2] - a.center[:2], legs[0])
            if abs(first) > RULES.max_straight_deg:
                words.append(word(first))
            words += [word(turn(u, v)) for u, v in zip(legs[:-1], legs[1:])]
            assert ", ".join(words) == c.answer
            # landmarks: the object nearest each turning point, with its label unique
            assert len(marks) == len(pts) - 2
            for m, q in zip(marks, pts[1:-1]):
                near = sorted((float(rect_distance(q[None], o)[0]), o.id) for o in scene.objects)
                assert near[0][1] == m.id and near[0][0] <= RULES.landmark_max_distance_m
                assert near[1][0] - near[0][0] >= RULES.landmark_margin_m - 1e-9
                assert sum(o.label == m.label for o in scene.objects) == 1
            # the options: the answer's back positions, left/right varied; the text names no turn
            seqs = [x.split(", ") for x in (c.answer,) + c.distractors]
            assert len(set(map(tuple, seqs))) == RULES.num_options
            backs = [i for i, t in enumerate(seqs[0]) if t == "Turn Back"]
            assert all([i for i, t in enumerate(s) if t == "Turn Back"] == backs for s in seqs)
            text = c.template.format(**dict(c.fields))
            assert "Turn Left" not in text and "Turn Right" not in text
    assert n >= 10, n


@pytest.mark.slow  # 30 rooms generated (the route geometry: test_analytic_room_turns_left_then_right)
def test_route_questions_in_a_generated_set(rooms):
    rules = Rules().with_overrides(["route.max_per_scene=0", "route.clearance_m=0.15", "route.landmark_margin_m=0.2",
                                    "balance.null_permutations=0"])  # the report's held-out chance only
    gen = generate(rooms, ("route_planning",), rules, seed=0)
    recs = [r for rs in gen.questions.values() for r in rs]
    assert len(recs) >= 10
    for inp in rooms:
        parse_questions([json.dumps(r) for r in gen.questions[inp.scene.scene_id]], scene=inp.scene)
    for r in recs:
        assert r["question_type"] == "route_planning" and len(r["options"]) == 4
        texts = [option_letter(o)[1] for o in r["options"]]
        assert all(set(t.split(", ")) <= {"Turn Left", "Turn Right", "Turn Back"} for t in texts)
        assert r["question"].count("[please fill in]") == 1 + len(texts[0].split(", "))  # the note names it once


@pytest.mark.slow  # two generations on 30 rooms
def test_routes_are_deterministic(rooms):
    # null_permutations: the report's held-out chance only (the questions are the same without it)
    rules = Rules().with_overrides(["route.clearance_m=0.15", "route.landmark_margin_m=0.2",
                                    "balance.null_permutations=0"])
    a = generate(rooms[:12], ("route_planning",), rules, seed=5)
    b = generate(list(reversed(rooms[:12])), ("route_planning",), rules, seed=5)
    assert a.questions == b.questions and sum(map(len, a.questions.values())) > 0
