# vistest: the two commands are `make demo` and `make test`; both set themselves up.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DEMO_OUT ?= demo-out
export PYOPENGL_PLATFORM ?= egl

.PHONY: demo test bench setup clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/vistest demo-scene $(DEMO_OUT)/scene
	$(VENV)/bin/vistest visibility $(DEMO_OUT)/scene/scene.json -o $(DEMO_OUT)/visibility.npz --csv $(DEMO_OUT)/visibility.csv
	$(VENV)/bin/vistest budget $(DEMO_OUT)/scene/scene.json examples/demo-questions.jsonl --budgets 16,32,64,all \
		--profile uniform --visibility $(DEMO_OUT)/visibility.npz -o $(DEMO_OUT)/budget
	@echo
	@echo "Demo outputs:"
	@echo "  scene:      $(abspath $(DEMO_OUT))/scene/scene.json (video: $(abspath $(DEMO_OUT))/scene/video.mp4)"
	@echo "  visibility: $(abspath $(DEMO_OUT))/visibility.npz and visibility.csv"
	@echo "  budget GT:  $(abspath $(DEMO_OUT))/budget/{16,32,64,all}_frame.jsonl"

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) bench/visibility.py

clean:
	rm -rf $(VENV) $(DEMO_OUT)
