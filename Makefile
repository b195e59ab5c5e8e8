# vistest: the two commands are `make demo` and `make test`; both set themselves up.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DEMO_OUT ?= demo-out
DEMO_SCENE := $(DEMO_OUT)/scene/scene.json
DEMO_RUN_SCENE := $(DEMO_OUT)/run/scenes/demo-seed0
DEMO_VIS := $(DEMO_RUN_SCENE)/visibility.npz
DEMO_GEN := $(DEMO_OUT)/generated
DEMO_GEN_RUN := $(DEMO_OUT)/run-generated
DEMO_STRESS := $(DEMO_OUT)/stress
DEMO_STRESS_SCENE := $(DEMO_STRESS)/scenes/demo-seed0
DEMO_DYN := $(DEMO_OUT)/dynamic
DEMO_PT := $(DEMO_OUT)/perception-test
export PYOPENGL_PLATFORM ?= egl

.PHONY: demo test test-slow test-all test-clients lint bench bench-videos bench-batch bench-first-run setup clean variants

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,ray]'
	@# the Numba kernels, compiled now so that no first run waits on them (vistest compile, issue #47)
	$(VENV)/bin/vistest compile
	touch $(STAMP)

# `make demo` says where it is: one line per step on stderr, "make demo: step i of N: what", before the step's
# command (the longer commands draw their own progress bars; where stderr is not a terminal, a line every 10 s:
# vistest/progress.py). N counts the $(call demo_step,...) lines of this
# file; each expansion of demo_step adds one to its counter (step texts must not hold commas).
DEMO_STEPS := $(shell grep -c '^.$$.call demo_step,' $(lastword $(MAKEFILE_LIST)))
demo_counter :=
define demo_step
$(eval demo_counter += x)@echo "make demo: step $(words $(demo_counter)) of $(DEMO_STEPS): $(1)" >&2
endef

demo: $(STAMP)
	$(call demo_step,the demo scene and its video (vistest demo-scene))
	$(VENV)/bin/vistest demo-scene $(DEMO_OUT)/scene
	$(call demo_step,visibility; budget ground truth and videos; dummies; the timeline and contact sheets (vistest run))
	$(VENV)/bin/vistest run $(DEMO_SCENE) examples/demo-questions.jsonl -o $(DEMO_OUT)/run \
		--budgets 16,32,64,all --profile uniform --sheets
	$(call demo_step,the overlay video (vistest overlay))
	$(VENV)/bin/vistest overlay $(DEMO_SCENE) -o $(DEMO_RUN_SCENE)/overlay.mp4 --visibility $(DEMO_VIS)
	$(call demo_step,the overlay contact sheet (vistest overlay --png))
	$(VENV)/bin/vistest overlay $(DEMO_SCENE) --png -o $(DEMO_RUN_SCENE)/overlay.png --visibility $(DEMO_VIS) --quiet
	$(call demo_step,the most-frequent-answer baseline (vistest baseline))
	$(VENV)/bin/vistest baseline -r $(DEMO_RUN_SCENE) -o $(DEMO_RUN_SCENE)/baseline-most-frequent.jsonl
	$(call demo_step,its score report (vistest score))
	$(VENV)/bin/vistest score $(DEMO_RUN_SCENE)/baseline-most-frequent.jsonl -r $(DEMO_RUN_SCENE) \
		-o $(DEMO_RUN_SCENE)/score --quiet
	$(call demo_step,the revsi export (vistest export revsi))
	$(VENV)/bin/vistest export revsi $(DEMO_OUT)/run -o $(DEMO_OUT)/export/revsi --quiet
	$(call demo_step,the lmms-eval task export)
	$(VENV)/bin/vistest export lmms-eval-task $(DEMO_OUT)/run -o $(DEMO_OUT)/export/lmms-eval-task --quiet
	$(call demo_step,the VLMEvalKit export)
	$(VENV)/bin/vistest export vlmevalkit $(DEMO_OUT)/run -o $(DEMO_OUT)/export/vlmevalkit --quiet
	$(call demo_step,the jsonl export)
	$(VENV)/bin/vistest export jsonl $(DEMO_OUT)/run -o $(DEMO_OUT)/export/jsonl --quiet
	$(call demo_step,index.html again: the overlay and score report linked (vistest index))
	$(VENV)/bin/vistest index $(DEMO_OUT)/run > /dev/null
	$(call demo_step,generated questions of every type (vistest generate))
	$(VENV)/bin/vistest generate $(DEMO_SCENE) --visibility $(DEMO_VIS) --types all -o $(DEMO_GEN)/questions.jsonl \
		--report $(DEMO_GEN) --rule 'abs_distance.skip_probability=[]'
	$(call demo_step,their run with drop dummies (vistest run))
	$(VENV)/bin/vistest run $(DEMO_SCENE) $(DEMO_GEN)/questions.jsonl -o $(DEMO_GEN_RUN) --budgets 16,32,64,all \
		--profile uniform --visibility $(DEMO_VIS) --dummy drop --quiet
	$(call demo_step,their baseline (vistest baseline))
	$(VENV)/bin/vistest baseline -r $(DEMO_GEN_RUN) -o $(DEMO_GEN_RUN)/baseline-most-frequent.jsonl
	$(call demo_step,their score report (vistest score --protocol revsi))
	$(VENV)/bin/vistest score $(DEMO_GEN_RUN)/baseline-most-frequent.jsonl -r $(DEMO_GEN_RUN) --protocol revsi \
		-o $(DEMO_GEN_RUN)/score --quiet
	@# the stress test: the demo questions reformulated (circular, none-of-these, open, abstain), a run with
	@# drop dummies, the held-out blind model as the model, and its score report (docs/scoring.md). Its videos
	@# are the demo's (same frames, dummies named by content key): hard-linked, so the run encodes nothing.
	$(call demo_step,the stress test: the demo questions reformulated (vistest reformulate))
	$(VENV)/bin/vistest reformulate examples/demo-questions.jsonl -o $(DEMO_OUT)/stress-questions.jsonl \
		--report $(DEMO_OUT)/stress-reformulate
	$(call demo_step,the stress run folder: the demo videos hard-linked)
	rm -rf $(DEMO_STRESS)
	$(PY) -c "import os, shutil, sys; [shutil.copytree(os.path.join(sys.argv[1], d), os.path.join(sys.argv[2], d), \
		copy_function=os.link) for d in sys.argv[3:]]" $(DEMO_OUT)/run $(DEMO_STRESS) 16_frame 32_frame 64_frame all_frame dummy_drop
	$(call demo_step,the stress run (vistest run))
	$(VENV)/bin/vistest run $(DEMO_SCENE) $(DEMO_OUT)/stress-questions.jsonl -o $(DEMO_STRESS) \
		--budgets 16,32,64,all --profile uniform --dummy drop --visibility $(DEMO_VIS) --quiet
	$(call demo_step,its baseline (vistest baseline))
	$(VENV)/bin/vistest baseline -r $(DEMO_STRESS_SCENE) -o $(DEMO_STRESS_SCENE)/baseline-most-frequent.jsonl
	$(call demo_step,its score report (vistest score))
	$(VENV)/bin/vistest score $(DEMO_STRESS_SCENE)/baseline-most-frequent.jsonl -r $(DEMO_STRESS_SCENE) \
		-o $(DEMO_STRESS_SCENE)/score
	$(call demo_step,its index.html (vistest index))
	$(VENV)/bin/vistest index $(DEMO_STRESS) > /dev/null
	$(call demo_step,its lmms-eval task export)
	$(VENV)/bin/vistest export lmms-eval-task $(DEMO_STRESS) -o $(DEMO_OUT)/export/stress-lmms-eval-task --quiet
	$(call demo_step,the demo as 2D tracks in Perception Test's layout: boxes projected at 1 frame/s (vistest demo-scene --perception-test))
	$(VENV)/bin/vistest demo-scene $(DEMO_OUT)/scene --perception-test $(DEMO_PT) --quiet
	$(call demo_step,its import as a 2D scene with its questions (vistest import perception-test))
	$(VENV)/bin/vistest import perception-test $(DEMO_PT)/annotations.json -o $(DEMO_PT)/scene --quiet
	$(call demo_step,its run: visibility from 2D boxes; unknown frames; grounded questions' dummies (vistest run))
	$(VENV)/bin/vistest run $(DEMO_PT)/scene/scene.json $(DEMO_PT)/scene/questions.jsonl -o $(DEMO_PT)/run \
		--budgets 16,32,64,all --quiet
	$(call demo_step,its lmms-eval task export (vistest export lmms-eval-task))
	$(VENV)/bin/vistest export lmms-eval-task $(DEMO_PT)/run -o $(DEMO_OUT)/export/perception-test-lmms-eval-task --quiet
	$(call demo_step,the dynamic demo: a cart and a ball that move (vistest demo-scene --dynamic))
	$(VENV)/bin/vistest demo-scene $(DEMO_DYN) --dynamic
	$(call demo_step,its visibility with the moving boxes (vistest visibility))
	$(VENV)/bin/vistest visibility $(DEMO_DYN)/scene.json -o $(DEMO_DYN)/visibility.npz
	$(call demo_step,its overlay: each moving box at its pose per frame (vistest overlay))
	$(VENV)/bin/vistest overlay $(DEMO_DYN)/scene.json -o $(DEMO_DYN)/overlay.mp4 --visibility $(DEMO_DYN)/visibility.npz
	$(call demo_step,its questions from the tracks (vistest generate --types motion))
	$(VENV)/bin/vistest generate $(DEMO_DYN)/scene.json --visibility $(DEMO_DYN)/visibility.npz --types motion \
		-o $(DEMO_DYN)/generated/questions.jsonl --report $(DEMO_DYN)/generated --quiet
	@echo "make demo: the dynamic demo's questions: $(abspath $(DEMO_DYN))/generated/questions.jsonl (report: report.md beside it)" >&2
	$(call demo_step,their run: ground truth over each window at 16/32/64/all and STI-Bench's client; black dummies (vistest run))
	$(VENV)/bin/vistest run $(DEMO_DYN)/scene.json $(DEMO_DYN)/generated/questions.jsonl -o $(DEMO_DYN)/run \
		--budgets 16,32,64,all --profile uniform --visibility $(DEMO_DYN)/visibility.npz --dummy black \
		--evaluator sti-bench.qwen2_5_vl --quiet
	$(call demo_step,its exports with STI-Bench's client's own rows at every budget it caps: lmms-eval and VLMEvalKit's STIBench (vistest export --evaluator))
	$(VENV)/bin/vistest export lmms-eval-task $(DEMO_DYN)/run -o $(DEMO_OUT)/export/dynamic-lmms-eval-task \
		--evaluator sti-bench.qwen2_5_vl --quiet
	$(VENV)/bin/vistest export vlmevalkit $(DEMO_DYN)/run -o $(DEMO_OUT)/export/dynamic-vlmevalkit-stibench \
		--evaluator sti-bench.qwen2_5_vl --target STIBench --quiet
	$(call demo_step,the window report: sampled frames inside each window (vistest windows))
	$(VENV)/bin/vistest windows $(DEMO_DYN)/generated/questions.jsonl --scene $(DEMO_DYN)/scene.json \
		--evaluator sti-bench.qwen2_5_vl -o $(DEMO_DYN)/run/windows.md
	$(call demo_step,a controlled scenario seen from outside: a tabletop orbited while a cup slides (vistest synth))
	$(VENV)/bin/vistest synth examples/synth/tabletop-orbit-slide.json -o $(DEMO_OUT)/synth/tabletop-orbit-slide \
		--frames 90 --size 320x240 --quiet
	$(call demo_step,a controlled scenario seen from inside: a walk through a furnished room (vistest synth))
	$(VENV)/bin/vistest synth examples/synth/room-walk.json -o $(DEMO_OUT)/synth/room-walk --frames 90 --size 320x240 \
		--quiet
	@echo
	@echo "Demo outputs:"
	@echo "  scene:         $(abspath $(DEMO_OUT))/scene/scene.json (video: $(abspath $(DEMO_OUT))/scene/video.mp4)"
	@echo "  visibility:    $(abspath $(DEMO_OUT))/run/scenes/demo-seed0/visibility.npz"
	@echo "  budget GT:     $(abspath $(DEMO_OUT))/run/scenes/demo-seed0/{16,32,64,all}_frame.jsonl"
	@echo "  budget videos: $(abspath $(DEMO_OUT))/run/{16,32,64,all}_frame/demo-seed0.mp4"
	@echo "  dummy videos:  $(abspath $(DEMO_OUT))/run/dummy_{drop,black,mask,allblack}/{16,32,64}_frame/ (budget dummies)"
	@echo "  dummy GT:      $(abspath $(DEMO_OUT))/run/scenes/demo-seed0/dummy_gt.jsonl"
	@echo "  manifest:      $(abspath $(DEMO_OUT))/run/manifest.jsonl"
	@echo "  overlay:       $(abspath $(DEMO_RUN_SCENE))/overlay.mp4 and overlay.png"
	@echo "  timeline:      $(abspath $(DEMO_RUN_SCENE))/timeline.png"
	@echo "  blind score:   $(abspath $(DEMO_RUN_SCENE))/score/report.md (most-frequent-answer baseline)"
	@echo "  exports:       $(abspath $(DEMO_OUT))/export/{revsi,lmms-eval-task,vlmevalkit,jsonl}/ (docs/export.md)"
	@echo "  sheets:        $(abspath $(DEMO_OUT))/run/sheets/"
	@echo "  generated:     $(abspath $(DEMO_GEN))/questions.jsonl and report.md (vistest generate, docs/generate.md)"
	@echo "  its pipeline:  $(abspath $(DEMO_GEN_RUN))/ (budget GT, videos, drop dummies, score/report.md)"
	@echo "  2D tracks:     $(abspath $(DEMO_PT))/run/ (the demo in Perception Test's layout; docs/tracks2d.md)"
	@echo "  stress test:   $(abspath $(DEMO_STRESS_SCENE))/score/report.md (reformulated questions: $(abspath $(DEMO_OUT))/stress-questions.jsonl;"
	@echo "                 page: $(abspath $(DEMO_STRESS))/index.html;"
	@echo "                 variants not written and why: $(abspath $(DEMO_OUT))/stress-reformulate/report.md)"
	@echo "  dynamic demo:  $(abspath $(DEMO_DYN))/scene.json (moving objects: docs/scene-format.md), overlay.mp4"
	@echo "                 its questions: $(abspath $(DEMO_DYN))/generated/questions.jsonl and report.md (docs/generate.md)"
	@echo "                 their run: $(abspath $(DEMO_DYN))/run/ (ground truth per window: scenes/*/{16,32,64,all}_frame.jsonl,"
	@echo "                 STI-Bench's client: scenes/*/evaluators/; black dummies; window report: windows.md)"
	@echo "                 exported with the client's own rows: $(abspath $(DEMO_OUT))/export/dynamic-{lmms-eval-task,vlmevalkit-stibench}/"
	@echo "  synth:         $(abspath $(DEMO_OUT))/synth/{tabletop-orbit-slide,room-walk}/ (exocentric and egocentric"
	@echo "                 scenarios rendered from examples/synth/*.json: video.mp4 and scene.json; docs/synth.md)"
	@echo "  open this:     $(abspath $(DEMO_OUT))/run/index.html"

# `make variants SCENES=DIR OUT=DIR`: every DIR/*/scene.json (beside its questions.jsonl) through
# `vistest run --if-stale` into OUT, one target per scene: `make -j4 variants` runs scenes in parallel,
# and a rerun redoes only scenes that are not current by their record in OUT (an input's content, an
# output-affecting option, a rules version or an output changed, said per scene; the rule `vistest batch`
# skips scenes by: docs/batch.md);
# OUT/index.html is written once at the end. VARIANT_OPTS: extra `vistest run` options,
# e.g. VARIANT_OPTS="--dummy drop,black". `vistest batch DIR -o OUT` does the same in one command,
# and goes on past a failing scene, on a process pool or a Ray cluster (docs/batch.md).
SCENES ?= scenes
OUT    ?= variants-out
VARIANT_OPTS ?=
override SCENES := $(patsubst %/,%,$(SCENES))
override OUT    := $(patsubst %/,%,$(OUT))
SCENE_JOBS := $(patsubst $(SCENES)/%/scene.json,variant-scene/%,$(wildcard $(SCENES)/*/scene.json))

variants: $(SCENE_JOBS)
	@test ! -d $(OUT) || $(VENV)/bin/vistest index $(OUT) >/dev/null
	@echo "variants: $(words $(SCENE_JOBS)) scene(s) from $(SCENES) in $(abspath $(OUT)) (manifest: $(abspath $(OUT))/manifest.jsonl)"

.PHONY: $(SCENE_JOBS)
$(SCENE_JOBS): variant-scene/%: | $(STAMP)
	@VISTEST=$(abspath $(VENV))/bin/vistest bin/vistest-scene $(SCENES)/$* $(OUT) $(VARIANT_OPTS)

# `make test`: the fast tier, every test not marked slow (pytest -m "not slow"), on every core
# (pytest-xdist, one test module per worker at a time, longest modules first: see tests/conftest.py).
# `make test-slow`: the slow tier (the cold Numba compile, the 300-frame video decode checks, Ray on
# two nodes, kill/SIGINT loops and reruns, every sampler profile, the random pyrender scenes every frame,
# the 20- and 30-room generated sets, the real sample's stand-in mesh). CI (.ci/run) runs
# both; `make test-all` runs both in one pytest run. TEST_JOBS=0: in this process, no workers.
# The fast tier's aim: 60 s wall on two cores (README, "Tests": what was measured, and how).
# PYTHONDONTWRITEBYTECODE is cleared so that pytest caches its compiled test modules (__pycache__/, ignored).
TEST_JOBS ?= auto
PYTEST := PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder

test: $(STAMP)
	$(PYTEST) -m "not slow"

test-slow: $(STAMP)
	$(PYTEST) -m slow

test-all: $(STAMP)
	$(PYTEST)

# `make test-clients`: tests/clients/ against the real lmms-eval package (0.7.3: its TaskManager, evaluator and
# revsi task), the sampler profiles against torch's own linspace (tests/test_sampling.py, which `make test` runs
# without torch), and the VLMEvalKit checks of tests/test_export.py against VLMEvalKit's own VsiBench source (from
# ms-vlmeval, VLMEvalKit packaged by ModelScope; its ReVSI class is in no package: those checks need a checkout,
# VISTEST_VLMEVALKIT_SRC), in a cached environment of their own, .venv-clients (torch CPU, lmms-eval and ms-vlmeval
# without their dependencies: tests/clients/{requirements,no-deps}.txt; about 2.4 GB, about 4 minutes to set up, then reused
# until pyproject.toml or the requirements change). `make test` neither needs nor runs it.
CLIENTS_VENV ?= .venv-clients
CLIENTS_PY := $(CLIENTS_VENV)/bin/python
CLIENTS_STAMP := $(CLIENTS_VENV)/.installed

$(CLIENTS_STAMP): pyproject.toml tests/clients/requirements.txt tests/clients/constraints.txt tests/clients/no-deps.txt
	$(PYTHON) -m venv $(CLIENTS_VENV)
	$(CLIENTS_PY) -m pip install --quiet --upgrade pip
	$(CLIENTS_PY) -m pip install --quiet -c tests/clients/constraints.txt -r tests/clients/requirements.txt \
		-e '.[test]'
	$(CLIENTS_PY) -m pip install --quiet --no-deps -r tests/clients/no-deps.txt
	touch $(CLIENTS_STAMP)

test-clients: $(CLIENTS_STAMP)
	$(CLIENTS_PY) -m pytest -q tests/clients tests/test_sampling.py
	$(CLIENTS_PY) -m pytest -q tests/test_export.py -k vlmevalkit

# ruff, configured in pyproject.toml ([tool.ruff]): checks only, never rewrites
lint: $(STAMP)
	$(VENV)/bin/ruff check vistest tests bench

bench: $(STAMP)
	$(PY) bench/visibility.py

bench-videos: $(STAMP)
	$(PY) bench/videos.py

bench-batch: $(STAMP)
	$(PY) bench/batch.py

bench-first-run: $(STAMP)
	$(PY) bench/first_run.py

clean:
	rm -rf $(VENV) $(CLIENTS_VENV) $(DEMO_OUT)
