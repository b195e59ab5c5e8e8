#!/usr/bin/env bash
# Does a refactor change what `vistest run` writes? Runs the demo scene (make demo's options) with the code of
# git revision BASE (default: main) and with this working tree, into the same folder path one after the other, and
# compares every file of the two run folders by sha256 (nothing ignored). The scene records keep each output's
# modification time (mtime_ns, vistest.atomic.file_record), which two runs cannot share: a record that differs is
# compared again with those fields alone masked, and the script says so; any other difference fails.
#
#   bench/same_run.sh [BASE] [WORK]     # WORK: a scratch folder (default: a new one under /tmp); a second call
#                                       # with the same WORK reuses its BASE code, compiled kernels and demo scene
#
# Exit 0: identical (records: but for mtime_ns); 1: a difference (listed). Issue #46 ("items 1-2 change no output").
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
(cd "$work/run-base" && find . -type f | sort | xargs sha256sum) > "$work/base.sha256"
(cd "$work/run-work" && find . -type f | sort | xargs sha256sum) > "$work/work.sha256"
echo "$(wc -l < "$work/base.sha256") files at $base, $(wc -l < "$work/work.sha256") in the working tree" >&2
status=0
if ! diff <(awk '{print $2}' "$work/base.sha256") <(awk '{print $2}' "$work/work.sha256") >&2; then
    echo "different file lists" >&2
    status=1
fi
mask='import json, sys
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k != "mtime_ns"}
    return [strip(v) for v in x] if isinstance(x, list) else x
print(json.dumps(strip(json.load(open(sys.argv[1]))), sort_keys=True, indent=1))'
while read -r sum path; do
    other=$(awk -v p="$path" '$2 == p {print $1}' "$work/work.sha256")
    [ "$sum" = "$other" ] && continue
    if [[ "$path" == *.json ]] && diff <("$py" -c "$mask" "$work/run-base/$path") \
            <("$py" -c "$mask" "$work/run-work/$path") > /dev/null; then
        echo "$path: differs in mtime_ns only (each output's modification time)" >&2
    else
        echo "$path: DIFFERS" >&2
        status=1
    fi
done < "$work/base.sha256"
[ $status = 0 ] && echo "identical: every file of the run folder (records: but for mtime_ns)" >&2
echo "folders: $work/run-base $work/run-work" >&2
exit $status
