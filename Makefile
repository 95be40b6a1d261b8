# commlab: the two commands of the README, and a few more.
#   make lab    create .venv, install everything, open the book in JupyterLab (127.0.0.1, with a token)
#   make test   create .venv, install everything, run every test (unit, distributed, notebooks, browser)
#   make book   build the static HTML edition under _build/html
# HOST and PORT choose where JupyterLab listens: make lab HOST=0.0.0.0 PORT=9999

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8888
STAMP := $(VENV)/.commlab-installed
PYTEST_WORKERS ?= 2

.PHONY: install lab test test-unit test-notebooks test-browser book benchmarks clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# JupyterLab refuses to run as root without --allow-root (containers, cloud GPU boxes)
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: install
	$(VENV)/bin/jupyter lab --ServerApp.ip=$(HOST) --ServerApp.port=$(PORT) $(ALLOW_ROOT) \
		--ServerApp.root_dir=$(CURDIR) chapters/00_welcome.ipynb

test: install
	bash scripts/install_browser.sh
	$(MAKE) test-unit test-notebooks test-browser

test-unit: install
	$(PY) -m pytest tests/unit tests/dist tests/notebooks -n $(PYTEST_WORKERS) --dist loadscope
	$(PY) -m pytest --doctest-modules src/commlab -p no:cacheprovider -q

# notebooks under test keep their exercise progress out of the user's home, and run the labs with solutions
NOTEBOOK_ENV := COMMLAB_PROGRESS=$(CURDIR)/_build/test-progress.json COMMLAB_LEARNER=ci COMMLAB_LAB_SOLUTIONS=1 COMMLAB_LABS_MINE=$(CURDIR)/_build/labs-mine

test-notebooks: install
	mkdir -p _build
	$(NOTEBOOK_ENV) $(PY) -m pytest --nbval-lax --nbval-current-env --nbval-cell-timeout=240 chapters labs -n $(PYTEST_WORKERS) --dist loadscope -p no:cacheprovider

test-browser: install
	$(NOTEBOOK_ENV) $(PY) -m pytest tests/browser -p no:cacheprovider

book: install
	$(VENV)/bin/commlab book build --execute --out _build/html

benchmarks: install
	for script in benchmarks/*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

clean:
	rm -rf _build tests/browser/output .pytest_cache
