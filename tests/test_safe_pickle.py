"""The safe unpickler of info pickles: numpy arrays and plain values from every protocol, nothing else.

OpenMMLab's ``dump`` (mmcv / mmengine) writes protocol 2, where ``bytes`` (so every numpy
buffer) go through ``_codecs.encode`` and builtins are named ``__builtin__``; files written with
numpy 1.x name ``numpy.core.multiarray``, numpy 2.x ``numpy._core.multiarray``. The reference
is the plain ``pickle.load`` of the same bytes (safe here: we wrote them).
"""
from __future__ import annotations

import collections
import os
import pickle

import numpy as np
import pytest

from vistest.datasets import AdapterError, import_scene
from vistest.datasets.common import read_pickle


def sample():
    return {
        "f32": np.arange(12, dtype=np.float32).reshape(3, 4), "f64": np.linspace(0, 1, 5),
        "i64": np.array([[1, -2], [3, 4]]), "u8": np.array([0, 255], np.uint8), "bool": np.array([True, False]),
        "names": np.array(["table", "sofa"]), "fortran": np.asfortranarray(np.eye(3)),
        "struct": np.zeros(2, dtype=[("a", "<f4"), ("b", "<i8")]), "objects": np.array([{"k": [1, 2]}, None], object),
        "scalars": (np.float64(1.5), np.int32(-3), np.bool_(True), np.str_("x")), "dtype": np.dtype("<u2"),
        "plain": [1, 2.5, "s", b"\x00\xff", None, True, {3, 4}, frozenset({5}), (6, 7), bytearray(b"ab"), 1 + 2j],
        "ordered": collections.OrderedDict(a=1, b=[np.zeros(2)]),
    }


def same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and \
            (a.dtype == object and all(same(x, y) for x, y in zip(a.ravel(), b.ravel())) or np.array_equal(a, b))
    if isinstance(a, dict):
        return type(a) is type(b) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_every_protocol_rebuilds_numpy_and_plain_values(tmp_path, protocol):
    data = pickle.dumps(sample(), protocol=protocol)
    (tmp_path / "x.pkl").write_bytes(data)
    got = read_pickle(tmp_path / "x.pkl", "info pickle")
    assert same(pickle.loads(data), got)
    assert got["f32"].dtype == np.float32 and got["names"][1] == "sofa" and got["plain"][3] == b"\x00\xff"


@pytest.mark.parametrize("protocol", [0, 2])
def test_numpy_1x_module_names(tmp_path, protocol):
    data = pickle.dumps(sample(), protocol=protocol)
    old = data.replace(b"numpy._core.", b"numpy.core.")  # how numpy 1.x names its reconstructors
    assert old != data and b"numpy._core" not in old
    (tmp_path / "x.pkl").write_bytes(old)
    assert same(pickle.loads(data), read_pickle(tmp_path / "x.pkl", "info pickle"))


class Evil:
    def __reduce__(self):
        return os.system, ("echo pwned > /dev/null",)


@pytest.mark.parametrize("payload, refused", [
    (lambda: pickle.dumps({"data_list": [Evil()]}, protocol=2), "refusing to load posix.system"),
    (lambda: pickle.dumps({"data_list": [Evil()]}, protocol=5), "refusing to load posix.system"),
    (lambda: b"cbuiltins\neval\n(V1+1\ntR.", "refusing to load builtins.eval"),
    (lambda: b"c__builtin__\ngetattr\n(c__builtin__\nlist\nVappend\ntR.", "refusing to load builtins.getattr"),
    (lambda: b"c_codecs\nencode\n(V789c\nVhex\ntR.", "only latin-1"),
    (lambda: b"cnumpy\nload\n(Vx.npy\ntR.", "refusing to load numpy.load"),
    (lambda: pickle.dumps(collections.defaultdict(list), protocol=2), "refusing to load collections.defaultdict"),
])
def test_arbitrary_globals_are_refused(tmp_path, payload, refused):
    if os.name != "posix" and "posix" in refused:
        pytest.skip("os.system is posix.system on POSIX only")
    (tmp_path / "evil.pkl").write_bytes(payload())
    with pytest.raises(AdapterError, match=refused):
        read_pickle(tmp_path / "evil.pkl", "info pickle")


def test_embodiedscan_reads_a_protocol_2_info_pickle(tmp_path):
    """As mmengine.dump writes it: protocol 2, numpy arrays through _codecs.encode."""
    from test_adapters_embodiedscan import write_infos

    path = write_infos(tmp_path)
    doc = pickle.loads(path.read_bytes())
    path.write_bytes(pickle.dumps(doc, protocol=2))
    assert b"_codecs\nencode" in path.read_bytes()
    scene_path = import_scene("embodiedscan", path, tmp_path / "out",
                              options={"scene": "scene0000_00", "data_root": str(tmp_path / "scannet")})
    from vistest.scene import Scene

    scene = Scene.load(scene_path)
    assert len(scene.objects) == 1 and len(scene.frames) == 2
    assert scene.frames[0].image is not None  # the posed image is recorded for the audit's colour evidence
    # a sample with no instances is an import without boxes: an error
    doc["data_list"][0]["instances"] = []
    path.write_bytes(pickle.dumps(doc, protocol=2))
    with pytest.raises(AdapterError, match="embodiedscan found an annotation with no objects"):
        import_scene("embodiedscan", path, tmp_path / "out2",
                     options={"scene": "scene0000_00", "data_root": str(tmp_path / "scannet")})
