"""The pyrender reference itself agrees with analytic silhouettes (pixel-centre convention)."""
import numpy as np
import pytest

from vistest.visibility.render import BoxSegRenderer
from vistest.scene import Intrinsics

W, H = 640, 480


def render_counts(boxes, k, pose=np.eye(4)):
    c = np.array([b[0] for b in boxes], float)
    s = np.array([b[1] for b in boxes], float)
    r = np.repeat(np.eye(3)[None], len(boxes), axis=0)
    ref = BoxSegRenderer(c, s, r, W, H, near=1e-3)
    try:
        return ref.counts(pose, k), ref.labels(pose, k)
    finally:
        ref.close()


def test_quadrant_box_fills_exactly_the_quadrant_pixels():
    k = Intrinsics(500.0, 500.0, 319.5, 239.5)
    counts, lab = render_counts([([-0.64, -0.48, 2.5], [1.28, 0.96, 1.0])], k)
    assert counts[0] == 320 * 240
    assert (lab[:240, :320] == 1).all()


def test_off_centre_principal_point_is_placed_at_opencv_pixel_centres():
    # front face spans u in [100, 300], v in [50, 125] (OpenCV): pixels 101..299 are fully inside,
    # pixels 100 and 300 straddle an edge through their centres (GL's rule takes one of them)
    k = Intrinsics(400.0, 300.0, 100.0, 50.0)
    _, lab = render_counts([([0.5, 0.25, 2.5], [1.0, 0.5, 1.0])], k)
    cols = np.where(lab.any(axis=0))[0]
    rows = np.where(lab.any(axis=1))[0]
    assert cols[0] in (100, 101) and cols[-1] in (299, 300) and len(cols) == 200
    assert rows[0] in (50, 51) and rows[-1] in (124, 125) and len(rows) == 75


def test_camera_inside_box_sees_inner_walls():
    k = Intrinsics(500.0, 500.0, 319.5, 239.5)
    counts, _ = render_counts([([0, 0, 0], [1, 1, 1]), ([0, 0, 0.3], [0.1, 0.1, 0.1])], k)
    assert counts[1] == pytest.approx(200 * 200, abs=400)
    assert counts[0] + counts[1] == W * H


def test_a_freed_renderer_releases_its_context_without_a_full_collection(monkeypatch):
    """free_renderer releases the EGL context and every OpenGL object (a renderer made after it draws the
    same pixels: nothing of the first one is left current) and calls no gc.collect (pyrender's delete does,
    0.1-0.2 s of CPU in a large process); a second call and pyrender's __del__ after it do nothing."""
    import gc

    from vistest.visibility.render import free_renderer

    k = Intrinsics(500.0, 500.0, 319.5, 239.5)
    box = [([-0.64, -0.48, 2.5], [1.28, 0.96, 1.0])]
    first = render_counts(box, k)[1]
    calls = []
    monkeypatch.setattr(gc, "collect", lambda *a, **kw: calls.append(a) or 0)
    ref = BoxSegRenderer(np.array([box[0][0]]), np.array([box[0][1]]), np.eye(3)[None], W, H, near=1e-3)
    again = ref.labels(np.eye(4), k)
    platform = ref.renderer._platform
    free_renderer(ref.renderer)
    assert ref.renderer._platform is None and ref.renderer._renderer is None
    assert platform._egl_context is None and platform._egl_display is None  # context destroyed, display ended
    free_renderer(ref.renderer)
    ref.renderer.__del__()
    assert calls == [] and (again == first).all() and (first == 1).sum() == 320 * 240
    assert (render_counts(box, k)[1] == first).all()
