"""Compare two ``vistest run`` output folders file by file, ignoring only stamp fields; print the differences.

    python bench/same_output.py RUN_A RUN_B [--quiet]

Exit status 0 when every file of either folder is in the other with the same content, 1 otherwise (each
difference on its own line), 2 on bad input. How to use it across two git revisions: bench/README.md.

Every file is compared byte for byte, except these, compared with the named fields left out:

* ``.vistest/records/*.json`` (scene records): ``mtime_ns`` (when a file was written, never what it holds),
  ``vistest_version`` (the package version, no longer written since issue #46), ``options.rules`` and
  ``options_key`` (the rules versions' stamp and the options' hash that includes it), and ``bytes`` and
  ``sha256`` of the ``.npz`` files listed (those tables are compared below, modulo their stamp);
* ``*.npz`` (visibility tables): every array byte for byte; in ``params``, ``rules`` (the table's stamp) and
  ``vistest_key`` (its cache key, which held the visibility rules version before issue #46; the scene's
  content, size and occlusion it keys are compared through the table itself);
* ``*.json`` and ``*.jsonl`` elsewhere: ``vistest_version`` and ``rules_versions`` where they appear
  (provenance stamps).

Lock files (``*.lock``) are compared by name only: their content names the last holder.
"""
from __future__ import annotations

import argparse
import ast
import io
import json
import sys
import zipfile
from pathlib import Path

import numpy as np

STAMP_FIELDS = ("vistest_version", "rules_versions")
RECORD_OPTIONS_STAMPS = ("rules",)
NPZ_PARAM_STAMPS = ("rules", "vistest_key")


def _drop(doc, names):
    """``doc`` with every key in ``names`` removed at any depth."""
    if isinstance(doc, dict):
        return {k: _drop(v, names) for k, v in doc.items() if k not in names}
    if isinstance(doc, list):
        return [_drop(v, names) for v in doc]
    return doc


def _record(data: bytes):
    doc = _drop(json.loads(data), ("mtime_ns",) + STAMP_FIELDS)
    opts = doc.get("options")
    if isinstance(opts, dict):
        doc["options"] = {k: v for k, v in opts.items() if k not in RECORD_OPTIONS_STAMPS}
    doc.pop("options_key", None)
    for path, rec in (doc.get("files") or {}).items():
        if path.endswith(".npz") and isinstance(rec, dict):
            rec.pop("bytes", None)
            rec.pop("sha256", None)
    return doc


def _npz(data: bytes) -> dict:
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    out = {}
    for k, a in arrays.items():
        if k == "params":
            params = dict(ast.literal_eval(str(a)))
            out[k] = repr(sorted((p, v) for p, v in params.items() if p not in NPZ_PARAM_STAMPS))
        else:
            out[k] = (a.dtype.str, a.shape, a.tobytes())
    return out


def _json_lines(data: bytes):
    return [_drop(json.loads(line), STAMP_FIELDS) for line in data.decode().splitlines() if line.strip()]


def normalised(rel: str, data: bytes):
    """What of file ``rel`` is compared (module docstring); raw bytes for most files."""
    name = rel.rsplit("/", 1)[-1]
    if name.endswith(".lock"):
        return None
    try:
        if rel.startswith(".vistest/records/") and name.endswith(".json"):
            return _record(data)
        if name.endswith(".npz"):
            return _npz(data)
        if name.endswith(".json"):
            return _drop(json.loads(data), STAMP_FIELDS)
        if name.endswith(".jsonl"):
            return _json_lines(data)
    except (ValueError, SyntaxError, zipfile.BadZipFile):
        pass  # not what its name says: compared as bytes
    return data


def _what_differs(a, b, size_a: int, size_b: int) -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        return "other " + ", ".join(map(str, keys[:8])) + (" ..." if len(keys) > 8 else "")
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{len(a)} vs {len(b)} lines"
        lines = [i + 1 for i, (x, y) in enumerate(zip(a, b)) if x != y]
        return "other lines " + ", ".join(map(str, lines[:8])) + (" ..." if len(lines) > 8 else "")
    return f"other bytes ({size_a} vs {size_b} bytes)"


def compare(a: Path, b: Path) -> list[str]:
    """Every difference between run folders ``a`` and ``b``, one line each (empty: the same)."""
    fa = {p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file()}
    fb = {p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file()}
    out = [f"{p}: only in {a}" for p in sorted(fa - fb)] + [f"{p}: only in {b}" for p in sorted(fb - fa)]
    for rel in sorted(fa & fb):
        da, db = (a / rel).read_bytes(), (b / rel).read_bytes()
        if da == db:
            continue
        na, nb = normalised(rel, da), normalised(rel, db)
        if na != nb:
            out.append(f"{rel}: {_what_differs(na, nb, len(da), len(db))}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_a", type=Path)
    ap.add_argument("run_b", type=Path)
    ap.add_argument("--quiet", action="store_true", help="print the differences only, no summary line")
    args = ap.parse_args(argv)
    for d in (args.run_a, args.run_b):
        if not (d / "manifest.jsonl").is_file():
            print(f"Error: {d}: manifest.jsonl: not found; expected a 'vistest run' output folder", file=sys.stderr)
            return 2
    diffs = compare(args.run_a, args.run_b)
    for line in diffs:
        print(line)
    if not args.quiet:
        n = sum(1 for p in args.run_a.rglob("*") if p.is_file())
        print(f"same_output: {n} files in {args.run_a}; {len(diffs)} difference(s)"
              + ("" if diffs else " (stamp fields aside: byte-identical)"), file=sys.stderr)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
