#!/usr/bin/env bash
# Does a refactor change what `vistest run` writes? Runs the demo scene (make demo's options) with the code of
# git revision BASE (default: main) and with this working tree, on one rendering of the demo scene, and compares
# the two run folders with bench/same_output.py (byte for byte, the stamp fields its docstring names aside).
#
#   bench/same_run.sh [BASE] [WORK]     # WORK: a scratch folder (default: a new one under /tmp); a second call
#                                       # with the same WORK reuses its BASE code, compiled kernels and demo scene
#
# Exit 0: identical but for stamps; 1: a difference (listed). Issue #46 ("items 1-2 change no output").
set -euo pipefail
base=${1:-main}
work=${2:-$(mktemp -d /tmp/vistest-same-run.XXXXXX)}
repo=$(git rev-parse --show-toplevel)
py=${PYTHON:-$repo/.venv/bin/python}
if [ ! -f "$work/base/pyproject.toml" ]; then  # kept from an earlier call: its Numba cache is then warm
    mkdir -p "$work/base"
    git -C "$repo" archive "$base" | tar -x -C "$work/base"
fi
run() {  # run CODE_DIR OUT: vistest run of the demo scene with the code in CODE_DIR
    (cd "$1" && PYTHONPATH="$1" nice "$py" -c 'from vistest.cli import main; main()' run "$work/scene/scene.json" \
        "$repo/examples/demo-questions.jsonl" -o "$work/out" --budgets 16,32,64,all --profile uniform --quiet)
    rm -rf "$2"
    mv "$work/out" "$2"
}
[ -f "$work/scene/scene.json" ] || (cd "$repo" && nice "$py" -c 'from vistest.cli import main; main()' \
    demo-scene "$work/scene" --quiet)
run "$work/base" "$work/run-base"
run "$repo" "$work/run-work"
"$py" "$repo/bench/same_output.py" "$work/run-base" "$work/run-work" && status=0 || status=$?
echo "folders: $work/run-base $work/run-work" >&2
exit $status
