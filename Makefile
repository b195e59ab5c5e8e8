# vistest: the two commands are `make demo` and `make test`; both set themselves up.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DEMO_OUT ?= demo-out
export PYOPENGL_PLATFORM ?= egl

.PHONY: demo test bench bench-videos setup clean variants

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/vistest demo-scene $(DEMO_OUT)/scene
	$(VENV)/bin/vistest run $(DEMO_OUT)/scene/scene.json examples/demo-questions.jsonl -o $(DEMO_OUT)/run \
		--budgets 16,32,64,all --profile uniform
	@echo
	@echo "Demo outputs:"
	@echo "  scene:         $(abspath $(DEMO_OUT))/scene/scene.json (video: $(abspath $(DEMO_OUT))/scene/video.mp4)"
	@echo "  visibility:    $(abspath $(DEMO_OUT))/run/scenes/demo-seed0/visibility.npz"
	@echo "  budget GT:     $(abspath $(DEMO_OUT))/run/scenes/demo-seed0/{16,32,64,all}_frame.jsonl"
	@echo "  budget videos: $(abspath $(DEMO_OUT))/run/{16,32,64,all}_frame/demo-seed0.mp4"
	@echo "  dummy videos:  $(abspath $(DEMO_OUT))/run/dummy_{drop,black,mask}/demo-seed0/, dummy_allblack/demo-seed0.mp4"
	@echo "  dummy GT:      $(abspath $(DEMO_OUT))/run/scenes/demo-seed0/dummy_gt.jsonl"
	@echo "  manifest:      $(abspath $(DEMO_OUT))/run/manifest.jsonl"

# `make variants SCENES=DIR OUT=DIR`: every DIR/*/scene.json (beside its questions.jsonl) through
# `vistest run` into OUT, one target per scene: `make -j4 variants` runs scenes in parallel, and a
# rerun redoes only scenes whose inputs changed or whose outputs are missing (OUT/.vistest/*.done.d
# lists them). VARIANT_OPTS: extra `vistest run` options, e.g. VARIANT_OPTS="--dummy drop,black".
SCENES ?= scenes
OUT    ?= variants-out
VARIANT_OPTS ?=
override SCENES := $(patsubst %/,%,$(SCENES))
override OUT    := $(patsubst %/,%,$(OUT))
SCENE_DONE := $(patsubst $(SCENES)/%/scene.json,$(OUT)/.vistest/%.done,$(wildcard $(SCENES)/*/scene.json))

variants: $(SCENE_DONE)
	@echo "variants: $(words $(SCENE_DONE)) scene(s) from $(SCENES) in $(abspath $(OUT)) (manifest: $(abspath $(OUT))/manifest.jsonl)"

$(OUT)/.vistest/%.done: $(SCENES)/%/scene.json $(SCENES)/%/questions.jsonl | $(STAMP)
	VISTEST=$(abspath $(VENV))/bin/vistest bin/vistest-scene $(SCENES)/$* $(OUT) $(VARIANT_OPTS)

-include $(wildcard $(OUT)/.vistest/*.done.d)

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) bench/visibility.py

bench-videos: $(STAMP)
	$(PY) bench/videos.py

clean:
	rm -rf $(VENV) $(DEMO_OUT)
