"""Route planning (``route_planning``, VSI-Bench's and ReVSI's type): "You are a robot beginning at
the A facing the B. You want to navigate to the G. You will perform the following actions ...:
1. [please fill in] 2. Go forward until the L 3. [please fill in] 4. Go forward until the G.";
the answer is the sequence of turns ("Turn Left, Turn Right").

How a route is made (vistest.generate.rules.RouteRules; conventions of vistest.generate.geometry:
metres, +Z up, angles counter-clockwise seen from above, so a positive turn is to the left):

1. **Floor grid**: cells of ``cell_m`` inside the room (``room.polygon``, else the convex hull of
   every box's footprint grown by ``clearance_m``); a cell is blocked when it lies within
   ``clearance_m`` of the footprint of a box that stands on the floor (its bottom at most
   ``obstacle_max_bottom_m`` above the lowest box bottom, its top at least ``obstacle_min_top_m``
   above it: a rug or a wall lamp does not block).
2. **Shortest path** from A's centre (A itself does not block: one starts at it) to the free cell
   nearest to G's centre (8-connected grid without corner cutting, scipy's Dijkstra), shortened by
   line of sight (each vertex joined to the farthest later path cell it sees over free cells),
   then each vertex moved along the grid path to where its two legs are shortest (the bends of a
   shortest path are at obstacle corners): an any-angle polyline.
3. **Turns**: the heading change at each vertex, and at the start from the facing direction (A's
   centre towards B's centre) to the first leg. A change of at most ``max_straight_deg`` is no
   turn (vertices merged; at the start: "Go forward" first). Left: between 0 and
   ``back_turn_deg``, right: the mirror, back: ``back_turn_deg`` or more (the direction
   questions' "turn at least 135 degrees"); a turn less than ``min_angle_from_boundary_deg`` from
   a boundary (0, +-``back_turn_deg``) drops the route.
4. **Landmarks**: each vertex is named by the object whose footprint is nearest to it (label
   unique and seen, within ``landmark_max_distance_m``, every other object at least
   ``landmark_margin_m`` farther, not A, not G, not a landmark before it, not the faced object
   B), else the route is
   dropped.
5. **Options**: every option keeps the answer's "Turn Back" positions and varies left/right
   elsewhere (so no option can be ruled out from the text), ``num_options`` of them: routes with
   fewer than ``min_turns`` left/right turns are not asked.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product

import numpy as np

from . import geometry as geo
from . import templates as tpl
from .candidates import Candidate
from .facts import ObjectFacts, SceneFacts
from .rules import RouteRules

TYPE = "route_planning"
LEFT, RIGHT, BACK = "Turn Left", "Turn Right", "Turn Back"
_NEIGHBOURS = [(di, dj, float(np.hypot(di, dj))) for di in (-1, 0, 1) for dj in (-1, 0, 1) if di or dj]


@dataclass(frozen=True)
class FloorGrid:
    """Free floor cells: ``free[i, j]`` for the cell centred at ``origin + (i, j) * cell`` (metres)."""

    origin: np.ndarray
    cell: float
    free: np.ndarray

    def center(self, ij) -> np.ndarray:
        return self.origin + np.asarray(ij, float) * self.cell

    def nearest_free(self, xy: np.ndarray) -> tuple[int, int] | None:
        """The free cell whose centre is nearest to ``xy`` (None when no cell is free)."""
        ii, jj = np.nonzero(self.free)
        if not len(ii):
            return None
        d = np.hypot(self.origin[0] + ii * self.cell - xy[0], self.origin[1] + jj * self.cell - xy[1])
        k = int(np.argmin(d))
        return int(ii[k]), int(jj[k])

    def sees(self, a, b) -> bool:
        """Is the segment between the centres of cells ``a`` and ``b`` over free cells only
        (sampled every quarter cell, each sample's cell must be free)?"""
        a, b = np.asarray(a, float), np.asarray(b, float)
        n = max(2, int(np.ceil(np.abs(b - a).max() * 4)) + 1)
        t = np.linspace(0.0, 1.0, n)[:, None]
        cells = np.rint(a + (b - a) * t).astype(int)
        return bool(self.free[cells[:, 0], cells[:, 1]].all())


def _points_in_polygon(pts: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """(N,) bool: points strictly inside a simple polygon (even-odd rule)."""
    x, y = pts[:, 0], pts[:, 1]
    inside = np.zeros(len(pts), bool)
    for k in range(len(poly)):
        (x1, y1), (x2, y2) = poly[k], poly[(k + 1) % len(poly)]
        crosses = (y1 > y) != (y2 > y)
        with np.errstate(divide="ignore", invalid="ignore"):
            xin = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
        inside ^= crosses & (x < xin)
    return inside


def _points_polygon_distance(pts: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """(N,) distance from points to a convex polygon (0 inside)."""
    a, b = poly, np.roll(poly, -1, axis=0)
    ab = b - a
    t = np.clip(np.einsum("nkd,kd->nk", pts[:, None] - a[None], ab) / np.maximum((ab * ab).sum(1), 1e-12), 0, 1)
    closest = a[None] + t[..., None] * ab[None]
    d = np.linalg.norm(pts[:, None] - closest, axis=2).min(axis=1)
    return np.where(_points_in_polygon(pts, poly), 0.0, d)


def obstacles(facts: SceneFacts, rules: RouteRules) -> list[ObjectFacts]:
    """The objects that block the floor (step 1 of the module docstring)."""
    if not facts.objects:
        return []
    bottoms = {o.id: geo.corners(*o.box)[:, 2].min() for o in facts.objects}
    tops = {o.id: geo.corners(*o.box)[:, 2].max() for o in facts.objects}
    floor = min(bottoms.values())
    return [o for o in facts.objects if bottoms[o.id] - floor <= rules.obstacle_max_bottom_m
            and tops[o.id] - floor >= rules.obstacle_min_top_m]


def floor_grid(facts: SceneFacts, rules: RouteRules, standing_at: str | None = None) -> FloorGrid | None:
    """The free floor cells of the scene (None without objects); the object ``standing_at`` (an
    id: where the walk starts) does not block."""
    if not facts.objects:
        return None
    room = (facts.scene.room or {}).get("polygon")
    if room is not None:
        outline = np.asarray(room, float)
    else:
        pts = np.concatenate([o.footprint for o in facts.objects])
        ring = rules.clearance_m * np.array([[np.cos(a), np.sin(a)] for a in np.linspace(0, 2 * np.pi, 16, False)])
        outline = geo.convex_hull_2d((pts[:, None] + ring[None]).reshape(-1, 2))
    lo, hi = outline.min(axis=0), outline.max(axis=0)
    cell = rules.cell_m
    shape = np.floor((hi - lo) / cell).astype(int) + 1
    origin = lo + ((hi - lo) - (shape - 1) * cell) / 2
    ii, jj = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    pts = origin + np.stack([ii.ravel(), jj.ravel()], axis=1) * cell
    free = _points_in_polygon(pts, outline)
    if room is not None:  # keep clear of the walls too
        walls = np.full(len(pts), np.inf)
        for k in range(len(outline)):
            seg = np.stack([outline[k], outline[(k + 1) % len(outline)]])
            walls = np.minimum(walls, _points_polygon_distance(pts, seg))
        free &= walls >= rules.clearance_m
    for o in obstacles(facts, rules):
        if o.id == standing_at:
            continue
        fp = o.footprint
        near = (pts[:, 0] > fp[:, 0].min() - rules.clearance_m) & (pts[:, 0] < fp[:, 0].max() + rules.clearance_m) \
            & (pts[:, 1] > fp[:, 1].min() - rules.clearance_m) & (pts[:, 1] < fp[:, 1].max() + rules.clearance_m)
        idx = np.flatnonzero(near & free)
        if len(idx):
            free[idx[_points_polygon_distance(pts[idx], fp) < rules.clearance_m]] = False
    return FloorGrid(origin, cell, free.reshape(shape))


def grid_graph(grid: FloorGrid):
    """The free cells as a sparse graph: 8-connected, diagonal steps only between two free
    orthogonal neighbours (no corner cutting), weights in cells."""
    from scipy.sparse import coo_matrix

    free = np.pad(grid.free, 1)  # a blocked border: np.roll below never wraps onto a free cell
    index = np.full(free.shape, -1, np.int64)
    index[free] = np.arange(int(free.sum()))
    rows, cols, weights = [], [], []
    for di, dj, w in _NEIGHBOURS:
        if (di, dj) < (0, 0):
            continue  # each pair once; the graph is undirected

        def shifted(a, si, sj):
            return np.roll(a, (-si, -sj), axis=(0, 1))  # shifted(a)[i, j] = a[i + si, j + sj]

        ok = free & shifted(free, di, dj)
        if di and dj:
            ok &= shifted(free, di, 0) & shifted(free, 0, dj)
        rows.append(index[ok])
        cols.append(shifted(index, di, dj)[ok])
        weights.append(np.full(int(ok.sum()), w))
    r, c, w = (np.concatenate(x) for x in (rows, cols, weights))
    m = int(free.sum())
    return coo_matrix((w, (r, c)), shape=(m, m)).tocsr(), index[1:-1, 1:-1]


def shortest_paths(grid: FloorGrid, starts: list[tuple[int, int]]):
    """Dijkstra from each start cell over :func:`grid_graph`: a function ``path(k, goal)`` giving
    the cells of a shortest path from ``starts[k]`` to ``goal`` (None when unreachable)."""
    from scipy.sparse.csgraph import dijkstra

    graph, index = grid_graph(grid)
    cells = np.argwhere(grid.free)
    dist, pred = dijkstra(graph, directed=False, indices=[int(index[s]) for s in starts], return_predecessors=True)

    def path(k: int, goal: tuple[int, int]) -> list[tuple[int, int]] | None:
        g = int(index[goal])
        if not np.isfinite(dist[k, g]):
            return None
        out = [g]
        while out[-1] != int(index[starts[k]]):
            out.append(int(pred[k, out[-1]]))
        return [tuple(int(v) for v in cells[i]) for i in out[::-1]]

    return path


def smooth(grid: FloorGrid, path: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Line-of-sight shortening: from each vertex, jump to the farthest later cell it sees."""
    out = [path[0]]
    i = 0
    while i < len(path) - 1:
        j = len(path) - 1
        while j > i + 1 and not grid.sees(path[i], path[j]):
            j -= 1
        out.append(path[j])
        i = j
    return out


def tighten(grid: FloorGrid, path: list[tuple[int, int]], verts: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Move each interior vertex of a smoothed path to the cell of the grid path between its
    neighbours that makes the two legs shortest while both stay in sight (twice over): greedy
    smoothing can leave a vertex in the open, a shortest path bends at obstacle corners."""
    pos = {c: i for i, c in enumerate(path)}
    verts = list(verts)
    for _ in range(2):
        for k in range(1, len(verts) - 1):
            lo, hi = pos[verts[k - 1]], pos[verts[k + 1]]
            a, b = np.asarray(verts[k - 1], float), np.asarray(verts[k + 1], float)
            best, best_len = verts[k], np.inf
            for c in path[lo + 1:hi]:
                cc = np.asarray(c, float)
                length = np.linalg.norm(cc - a) + np.linalg.norm(b - cc)
                if length < best_len - 1e-9 and grid.sees(verts[k - 1], c) and grid.sees(c, verts[k + 1]):
                    best, best_len = c, length
            verts[k] = best
    out = [verts[0]]
    for k in range(1, len(verts)):  # vertices that became collinear with a neighbour's sight line
        if k < len(verts) - 1 and grid.sees(out[-1], verts[k + 1]):
            continue
        out.append(verts[k])
    return out


def turn_deg(heading: np.ndarray, leg: np.ndarray) -> float:
    """Signed heading change in degrees in (-180, 180]: positive to the left (counter-clockwise
    seen from above)."""
    a = float(geo.ccw_angle_deg(heading, leg[None])[0])
    return a - 360.0 if a > 180.0 else a


def turn_word(angle: float, rules: RouteRules) -> str | None:
    """The answer word of a heading change, None when it is within ``min_angle_from_boundary_deg``
    of a boundary (0, +-``back_turn_deg``)."""
    a = abs(angle)
    m = rules.min_angle_from_boundary_deg
    if a >= rules.back_turn_deg + m:
        return BACK
    if m <= a <= rules.back_turn_deg - m:
        return LEFT if angle > 0 else RIGHT
    return None


def merge_straight(points: list[np.ndarray], rules: RouteRules) -> list[np.ndarray]:
    """Drop the vertices whose heading change is at most ``max_straight_deg``."""
    out = list(points)
    k = 1
    while k < len(out) - 1:
        if abs(turn_deg(out[k] - out[k - 1], out[k + 1] - out[k])) <= rules.max_straight_deg:
            del out[k]
        else:
            k += 1
    return out


def landmark(facts: SceneFacts, xy: np.ndarray, rules: RouteRules) -> ObjectFacts | None:
    """The object naming a turning point (step 4 of the module docstring), None when none does."""
    d = sorted((float(_points_polygon_distance(xy[None], o.footprint)[0]), o.id) for o in facts.objects)
    if not d or d[0][0] > rules.landmark_max_distance_m:
        return None
    if len(d) > 1 and d[1][0] - d[0][0] < rules.landmark_margin_m:
        return None
    o = facts.by_id[d[0][1]]
    ex = {x.lower() for x in rules.exclude_labels}
    if len(facts.by_label[o.label]) != 1 or not o.seen or o.label.lower() in ex:
        return None
    return o


def options_for(answer: tuple[str, ...], k: int, rng: np.random.Generator) -> tuple[str, ...] | None:
    """``k - 1`` wrong turn sequences with the answer's "Turn Back" positions, left/right varied
    elsewhere, drawn at random (None when fewer exist)."""
    free = [i for i, w in enumerate(answer) if w != BACK]
    others = []
    for combo in product((LEFT, RIGHT), repeat=len(free)):
        seq = list(answer)
        for i, w in zip(free, combo):
            seq[i] = w
        if tuple(seq) != answer:
            others.append(", ".join(seq))
    if len(others) < k - 1:
        return None
    pick = np.sort(rng.choice(len(others), size=k - 1, replace=False))
    return tuple(others[i] for i in pick)


def candidates(facts: SceneFacts, rules: RouteRules, rng: np.random.Generator) -> list[Candidate]:
    """Every (A, B, G) route question the scene supports, by (A, G, B) ids; at most
    ``max_per_scene`` drawn at random (0: all)."""
    objs = list(facts.unique(exclude=rules.exclude_labels))
    if len(objs) < 3:
        return []
    out: list[Candidate] = []
    for ia, a in enumerate(objs):
        grid = floor_grid(facts, rules, standing_at=a.id)  # the walk starts at A's centre: A does not block
        if grid is None:
            continue
        s = grid.nearest_free(a.center[:2])
        path = shortest_paths(grid, [s]) if s is not None else None
        for ig, g in enumerate(objs):
            t = grid.nearest_free(g.center[:2]) if path is not None else None  # beside G
            if ig == ia or t is None or t == s:
                continue
            cells = path(0, t)
            if cells is None:
                continue
            pts = merge_straight([grid.center(c) for c in tighten(grid, cells, smooth(grid, cells))], rules)
            words, marks = [], []
            for k in range(1, len(pts) - 1):
                w = turn_word(turn_deg(pts[k] - pts[k - 1], pts[k + 1] - pts[k]), rules)
                lm = landmark(facts, pts[k], rules)
                if w is None or lm is None or lm.id in (a.id, g.id) or lm.id in {m.id for m in marks}:
                    break
                words.append(w)
                marks.append(lm)
            else:
                named = {a.id, g.id} | {m.id for m in marks}
                for b in objs:
                    if b.id in named:  # the faced object is no landmark: every object is named once
                        continue
                    c = _candidate(facts, rules, a, b, g, pts, words, marks, rng)
                    if c is not None:
                        out.append(c)
    if rules.max_per_scene and len(out) > rules.max_per_scene:
        out = [out[i] for i in np.sort(rng.choice(len(out), size=rules.max_per_scene, replace=False))]
    return out


def _candidate(facts, rules, a, b, g, pts, words, marks, rng) -> Candidate | None:
    """The question of one (A, B, G) and its route, None when the first turn is ambiguous or the
    route has too few left/right turns."""
    first = turn_deg(b.center[:2] - a.center[:2], pts[1] - pts[0])
    start = None if abs(first) <= rules.max_straight_deg else turn_word(first, rules)
    if start is None and abs(first) > rules.max_straight_deg:
        return None
    answer = tuple(([start] if start else []) + words)
    if sum(w != BACK for w in answer) < rules.min_turns or len(answer) > rules.max_turns:
        return None
    distractors = options_for(answer, rules.num_options, rng)
    if distractors is None:
        return None
    steps, n = [], 1
    if start:
        steps.append(f"{n}. [please fill in]")
        n += 1
    for k, lm in enumerate(marks):
        steps.append(f"{n}. Go forward until the {lm.label}")
        steps.append(f"{n + 1}. [please fill in]")
        n += 2
    steps.append(f"{n}. Go forward until the {g.label}.")
    detail = tuple(("x", float(p[0])) for p in pts) + tuple(("y", float(p[1])) for p in pts)
    return Candidate(facts.scene_id, TYPE, tpl.ROUTE_PLAN,
                     (("start_object", a.label), ("facing_object", b.label), ("destination_object", g.label),
                      ("actions", " ".join(steps))),
                     objects=(a.id, b.id, g.id) + tuple(m.id for m in marks), answer=", ".join(answer),
                     distractors=distractors, detail=detail)
