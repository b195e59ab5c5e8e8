"""Per question, what the run decided and what a model is shown: the drill-down of ``index.html``.

Read from the run folder (nothing is recomputed): per question of ``scenes/{scene_id}/``, its row
of every budget file (``{n}_frame.jsonl``: ``status``, the budget's ``ground_truth``, the reason in
words, ``reason_text``, the sampled ``frame_indices`` and the ``evidence_frames`` among them) and its
dummy rows (``dummy_gt.jsonl``: per mode and budget the dummy's answer, status and video, the objects
it removes). Objects are named by label, ``label (id)``, from the scene file the run's record names.

:func:`write_question_pictures` draws, per question and numeric budget, into
``scenes/{scene_id}/questions/{question id}/`` (vistest.layout.QUESTIONS_DIR):

* ``{budget}.jpg``: the sampled frames (at most :data:`MAX_TILES`, spread as the ``uniform``
  sampler spreads them; the title says so), each with the evidence box of every object the question
  is about drawn: its visible 2D bounding box from the run's ``visibility.npz`` (``bbox``: what the
  engine found visible, after occlusion; none where the object is hidden or out of view), captioned
  with the source frame and ``evidence`` (green) when the row lists the frame as holding the
  question's evidence;
* ``{budget}-{mode}.jpg``: the frames of that budget's dummy of each mode but ``allblack`` (every
  frame black), drawn from the source frames as the manifest says the dummy holds them (its
  ``source_frames``, ``black_frames`` and mask rectangles, filled grey here): what the dummy shows,
  not a decode of its video (``vistest sheet`` decodes every video and checks it against the manifest).

JPEG (quality :data:`JPEG_QUALITY`): thumbnails, written several times faster than PNG.

Source frames are decoded once per scene and scaled to tile size by ffmpeg (:class:`SourceTiles`;
``vistest run`` decodes them while its visibility child runs). Pixel conventions: OpenCV, RGB tiles.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np

from .. import layout
from ..budgets import budget_sort_key
from .summary import jsonl_objects, scene_file

TILE_WIDTH = 112  # pixels
MAX_TILES = 16  # tiles per strip (more frames: spread uniformly)
JPEG_QUALITY = 85
PREFETCH_MB = 32  # the most memory a run's prefetched tiles take (MB): 112x84 RGB tiles of ~1,100 frames
NOT_DRAWN = ("allblack",)  # dummy modes without pictures (every frame black: the page says so)
COLUMNS = 4  # a budget's sheet and a dummy's fit side by side on a 1280-pixel page
EVIDENCE_RGB, PLAIN_RGB, BOX_RGB = (120, 220, 120), (200, 200, 200), (255, 210, 40)


def budget_rows(run_dir: Path, scene_id: str) -> dict[str, dict[str, dict]]:
    """{budget label: {question id: its row}} of the scene's budget files, budgets in order."""
    folder = layout.scene_dir(run_dir, scene_id)
    out: dict[str, dict[str, dict]] = {}
    for path in sorted(folder.glob("*_frame.jsonl")) if folder.is_dir() else []:
        label = layout.budget_of_file(path.name)
        if label is not None:
            out[label] = {str(r.get("id")): r for r in jsonl_objects(path)}
    return dict(sorted(out.items(), key=lambda kv: budget_sort_key(kv[0])))


def dummy_rows(run_dir: Path, scene_id: str) -> dict[str, list[dict]]:
    """{question id: its dummy rows} of ``dummy_gt.jsonl``, in file order."""
    out: dict[str, list[dict]] = {}
    for r in jsonl_objects(layout.scene_dir(run_dir, scene_id) / layout.DUMMY_GT):
        out.setdefault(str(r.get("id")), []).append(r)
    return out


def object_labels(run_dir: Path, scene_id: str) -> dict[str, str]:
    """{object id: label} from the scene file of the run's record ({} when it cannot be read)."""
    path = scene_file(run_dir, scene_id)
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8")) if path else {}
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    objs = doc.get("objects") if isinstance(doc, dict) else None
    return {str(o.get("id")): str(o.get("label")) for o in objs or [] if isinstance(o, dict)}


def named(ids, labels: dict[str, str]) -> str:
    """Object ids as ``label (id)``, comma-separated."""
    return ", ".join(f"{labels[str(i)]} ({i})" if str(i) in labels else str(i) for i in ids)


def question_objects(row: dict, labels: dict[str, str]) -> list[str]:
    """The ids of the objects a question is about: its ``objects``, else every object whose label
    is its ``category`` (a counting question)."""
    ids = [str(i) for i in row.get("objects") or []]
    if not ids and row.get("category") is not None:
        ids = [i for i, lab in labels.items() if lab == str(row["category"])]
    return ids


def picture_path(run_dir: Path, scene_id: str, qid: str, budget: str, mode: str | None = None) -> Path:
    """``scenes/{scene_id}/questions/{qid}/{budget}[-{mode}].jpg`` (a question id's characters other than
    letters, digits, ``-_.`` as ``_``)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in qid)
    name = budget + (f"-{mode}" if mode else "") + ".jpg"
    return layout.scene_dir(run_dir, scene_id) / layout.QUESTIONS_DIR / safe / name


def _shown(frames: list[int]) -> list[int]:
    """Positions of ``frames`` shown: all, or :data:`MAX_TILES` spread like the uniform sampler."""
    from .sheets import shown_positions

    return list(shown_positions(len(frames), MAX_TILES))


def _draw_boxes(img: np.ndarray, boxes: list[np.ndarray], k: float) -> None:
    """Rectangles ``[x0, y0, x1, y1]`` (native pixels, NaN: none) on a tile ``k`` times native size."""
    import cv2

    for b in boxes:
        if np.isfinite(b).all():
            cv2.rectangle(img, (int(b[0] * k), int(b[1] * k)), (int(np.ceil(b[2] * k)), int(np.ceil(b[3] * k))),
                          BOX_RGB, 1)


def _visibility_boxes(npz: Path) -> tuple[dict[int, int], dict[str, int], np.ndarray] | None:
    """({decoded frame: row}, {object id: column}, bbox (F, O, 4)) of the visibility file ``npz``, or None."""
    import zipfile

    try:
        with np.load(npz, allow_pickle=False) as z:
            rows = {int(f): i for i, f in enumerate(z["frame_index"])}
            return rows, {str(o): i for i, o in enumerate(z["object_ids"])}, np.asarray(z["bbox"], float)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None


def write_question_pictures(run_dir: str | os.PathLike, scene_id: str,
                            visibility: str | os.PathLike | None = None, scene=None,
                            tiles: "SourceTiles | None" = None) -> list[Path]:
    """Write the pictures of the module docstring for every question of the scene; returns them.
    ``visibility``: the table the run used (None: the run folder's ``scenes/SCENE/visibility.npz``; a run
    given ``--visibility FILE`` writes none there). ``scene``: the Scene already loaded from the file
    the run's record names (``vistest run`` has it; None: read here). ``tiles``: the scene video's
    :class:`SourceTiles` (``vistest run`` prefetches them; None: decoded here). Nothing is drawn when the scene
    file or its video cannot be read (the page then shows the table only); without the table, no
    evidence boxes."""
    from ..atomic import write_atomic
    from ..scene import Scene
    from ..videos.manifest import read_manifest
    from .tiles import contact_sheet

    run_dir = Path(run_dir)
    if scene is None:
        path = scene_file(run_dir, scene_id)
        if path is None or not Path(path).is_file():
            return []
        scene = Scene.load(path)
    video = scene.path(scene.video) if scene.video else None
    if video is None or not Path(video).is_file():
        return []
    budgets = {b: rows for b, rows in budget_rows(run_dir, scene_id).items() if b != "all"}
    dummies = dummy_rows(run_dir, scene_id)
    recs = {r["path"]: r for r in read_manifest(run_dir)} if layout.manifest_path(run_dir).is_file() else {}
    labels = {o.id: o.label for o in scene.objects}
    boxes = _visibility_boxes(Path(visibility) if visibility is not None
                              else layout.scene_dir(run_dir, scene_id) / layout.VISIBILITY)
    plans = []  # (path, title, [(source frame, black, mask rects, object ids drawn, evidence)])
    for b, rows in budgets.items():
        for qid, row in rows.items():
            objs = question_objects(row, labels)
            fr = [int(f) for f in row.get("frame_indices") or []]
            ev = {int(f) for f in row.get("evidence_frames") or []}
            shown = [fr[p] for p in _shown(fr)]
            plans.append((picture_path(run_dir, scene_id, qid, b), f"{qid} at {b} frames: {row.get('status')}"
                          + (f" ({len(shown)} of {len(fr)} shown)" if len(shown) < len(fr) else ""),
                          [(f, False, [], objs, f in ev) for f in shown]))
            for d in dummies.get(qid, []):
                if str(d.get("num_frames")) != b or d.get("dummy_mode") in NOT_DRAWN or d.get("video") not in recs:
                    continue
                rec = recs[d["video"]]
                src = [int(f) for f in rec["source_frames"]]
                black = {int(f) for f in rec.get("black_frames", [])}
                masks: dict[int, list] = {}
                for m in rec.get("masks", []):
                    masks.setdefault(int(m[0]), []).append([float(v) for v in m[1:5]])
                shown = [src[p] for p in _shown(src)]
                plans.append((picture_path(run_dir, scene_id, qid, b, str(d.get("dummy_mode"))),
                              f"{qid}: dummy {d.get('dummy_mode')} at {b} frames, answer {d.get('ground_truth')}"
                              f" ({d.get('status')})" + (f" ({len(shown)} of {len(src)} shown)"
                                                         if len(shown) < len(src) else ""),
                              [(f, f in black, masks.get(f, []), [], False) for f in shown]))
    if not plans:
        return []
    source = tiles if tiles is not None else SourceTiles(video, scene.image_size)
    tiles = source.tiles(sorted({f for _p, _t, items in plans for f, *_ in items}))
    blank = np.zeros_like(next(iter(tiles.values())))
    k = TILE_WIDTH / float(scene.image_size[0])
    written = []
    for dest, title, items in plans:
        imgs, captions, colours = [], [], []
        for f, black, rects, objs, evidence in items:
            img = blank.copy() if black or f not in tiles else tiles[f].copy()
            for x0, y0, x1, y1 in rects:  # a mask dummy's rectangles (its video fills them; grey here)
                img[max(int(y0 * k), 0):int(np.ceil(y1 * k)), max(int(x0 * k), 0):int(np.ceil(x1 * k))] = 128
            if objs and boxes is not None and f in boxes[0]:
                _draw_boxes(img, [boxes[2][boxes[0][f], boxes[1][o]] for o in objs if o in boxes[1]], k)
            imgs.append(img)
            captions.append(f"src {f}" + (" black" if black else " mask" if rects else "")
                            + (" evidence" if evidence else ""))
            colours.append(EVIDENCE_RGB if evidence else PLAIN_RGB)
        write_atomic(dest, jpeg_bytes(contact_sheet(imgs, COLUMNS, captions, title, caption_colours=colours)))
        written.append(dest)
    return written


def jpeg_bytes(rgb: np.ndarray) -> bytes:
    """JPEG encoding (quality :data:`JPEG_QUALITY`) of an RGB ``uint8`` image."""
    import cv2

    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR),
                           [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    if not ok:
        raise RuntimeError("OpenCV could not encode the JPEG")
    return buf.tobytes()


class SourceTiles:
    """The scene video's frames at tile size (RGB, :data:`TILE_WIDTH` wide; ``size``, the scene's image
    size, sets the aspect), scaled by ffmpeg (area filter) so that only tiles cross the pipe.

    :meth:`prefetch` decodes every frame in a background thread (``vistest run`` starts it as its
    pipeline begins to wait for the visibility child, whose start leaves a core idle, so the pictures
    do not wait for the decode later); :meth:`tiles` decodes, in one pass, the asked-for frames it does
    not hold. A failed or stopped prefetch leaves its frames to that decode. ``num_frames``: the
    video's frames (the scene's), to keep the prefetch within :data:`PREFETCH_MB`."""

    def __init__(self, video: str | os.PathLike, size: tuple[int, int], num_frames: int = 0):
        self.video = Path(video)
        self.shape = (TILE_WIDTH, max(1, round(size[1] * TILE_WIDTH / size[0])))
        self.num_frames = num_frames
        self._got: dict[int, np.ndarray] = {}
        self._stop = threading.Event()
        self._reader = None
        self._thread: threading.Thread | None = None
        self._complete = False  # the prefetch read the video to its end: a frame it lacks is past the end

    def prefetch(self) -> bool:
        """Start decoding every frame in a background thread (once); False (nothing started) when the
        tiles of ``num_frames`` frames would not fit in :data:`PREFETCH_MB` (a longer video: the frames a
        picture shows, a few per budget, are decoded when drawn, not the whole video kept)."""
        fits = 0 < self.num_frames * self.shape[0] * self.shape[1] * 3 <= PREFETCH_MB * 2**20
        if self._thread is None and fits and not self._stop.is_set():
            self._thread = threading.Thread(target=self._decode_all, name="vistest-tiles", daemon=True)
            self._thread.start()
        return self._thread is not None

    def _decode_all(self) -> None:
        """The prefetch: every frame, in decode order, until the end or :meth:`close`."""
        from ..videos.ffmpeg import FrameReader

        shape = (self.shape[1], self.shape[0], 3)
        try:
            with FrameReader(self.video, self.shape, "rgb24", scale_to=self.shape) as reader:
                self._reader = reader
                for k, buf in enumerate(reader):
                    if self._stop.is_set():
                        return
                    self._got[k] = np.frombuffer(bytes(buf), np.uint8).reshape(shape)
            self._complete = True
        except Exception:  # an unreadable video: tiles() decodes (and meets the error) itself
            pass

    def tiles(self, frames: list[int]) -> dict[int, np.ndarray]:
        """{source frame: RGB tile} of ``frames`` (sorted): the prefetched ones, the others decoded
        now in one pass; a frame past the video's end is left out (drawn black). Never empty: a
        video that gives none gives one black tile under key -1."""
        from ..videos.ffmpeg import VideoError, read_frames

        if self._thread is not None:
            self._thread.join()
        out = {f: self._got[f] for f in frames if f in self._got}
        missing = [] if self._complete else [f for f in frames if f not in out]
        try:
            for f, img in zip(missing, read_frames(self.video, missing, scale_to=self.shape) if missing else ()):
                out[f] = img
        except VideoError:
            pass
        if not out:
            out[-1] = np.zeros((self.shape[1], self.shape[0], 3), np.uint8)
        return out

    def close(self) -> None:
        """Stop a prefetch still decoding (its ffmpeg process is killed) and free the tiles."""
        self._stop.set()
        thread = self._thread
        proc = getattr(self._reader, "_proc", None)  # None: not started, or already closed by the thread
        if thread is not None and thread.is_alive() and proc is not None:
            try:
                proc.kill()  # the thread's read ends; it closes the reader
            except OSError:
                pass
        if thread is not None:
            thread.join()
        self._got = {}

    def __enter__(self) -> "SourceTiles":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
