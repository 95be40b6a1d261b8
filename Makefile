# commlab: the two commands of the README, and a few more.
#   make lab      create .venv, install commlab with the book's tools ([book]), open the book in JupyterLab
#                 (127.0.0.1, with a token; a save keeps the notebook's metadata as committed:
#                 commlab.book.hygiene.pre_save)
#   make test     create .venv, install commlab[book,test], run every test (lint, unit, distributed, notebooks,
#                 browser)
#   make lint     ruff (src, tests, benchmarks, labs/scripts) and mypy (src/commlab), as configured in pyproject.toml
#   make book     build the static HTML edition under _build/html (notebooks whose content did not change are
#                 not executed again; `make book BOOK_FLAGS=--rebuild` executes them all)
#   make install  the development environment: what `make test` installs, without running anything
#   make git-filter  (run by lab and install) register scripts/nbclean.py as git's clean filter for *.ipynb
#                 (.gitattributes): a notebook JupyterLab saved with its kernel's metadata, or with outputs,
#                 is not a change to commit
# Every install uses constraints.txt (the exact torch CI tests). On a Linux machine without a GPU,
# TORCH_INDEX=https://download.pytorch.org/whl/cpu installs torch's CPU wheel (about 200 MB) instead of PyPI's
# CUDA build (several GB): make lab TORCH_INDEX=https://download.pytorch.org/whl/cpu
# LAB_HOST and LAB_PORT choose where JupyterLab listens: make lab LAB_HOST=0.0.0.0 LAB_PORT=9999
# (not HOST/PORT: tcsh exports HOST, some images export HOST=0.0.0.0 or PORT, and make would take them)

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
LAB_HOST ?= 127.0.0.1
LAB_PORT ?= 8888
PYTEST_WORKERS ?= 2
CONSTRAINTS := constraints.txt
TORCH_INDEX ?=
BOOK_FLAGS ?=
# one stamp per set of extras; the [book,test] install also satisfies [book]
STAMP_BOOK := $(VENV)/.commlab-book
STAMP_TEST := $(VENV)/.commlab-book-test
PIP := $(PY) -m pip install --quiet -c $(CONSTRAINTS)

.PHONY: install install-book git-filter lab lint test test-unit test-notebooks test-browser book benchmarks clean venv

venv:
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(if $(TORCH_INDEX),$(PIP) --index-url $(TORCH_INDEX) torch,)

$(STAMP_BOOK): pyproject.toml $(CONSTRAINTS)
	$(MAKE) venv
	$(PIP) -e '.[book]'
	touch $(STAMP_BOOK)

$(STAMP_TEST): pyproject.toml $(CONSTRAINTS)
	$(MAKE) venv
	$(PIP) -e '.[book,test]'
	touch $(STAMP_BOOK) $(STAMP_TEST)

install-book: $(STAMP_BOOK)

install: $(STAMP_TEST) git-filter

# only inside a git checkout (a release tarball has none); the filter runs from the checkout's top folder
git-filter:
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		git config filter.commlab-notebook.clean '$(PYTHON) scripts/nbclean.py' && \
		git config filter.commlab-notebook.required false; fi

# JupyterLab refuses to run as root without --allow-root (containers, cloud GPU boxes)
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: install-book
	@$(MAKE) --no-print-directory git-filter
	$(VENV)/bin/jupyter lab --ServerApp.ip=$(LAB_HOST) --ServerApp.port=$(LAB_PORT) $(ALLOW_ROOT) \
		--ServerApp.root_dir=$(CURDIR) --ContentsManager.pre_save_hook=commlab.book.hygiene.pre_save \
		chapters/00_welcome.ipynb

test: install
	bash scripts/install_browser.sh
	bash scripts/install_sandbox.sh
	$(MAKE) lint test-unit test-notebooks test-browser

# seconds: ruff, then mypy (incremental: .mypy_cache keeps what did not change)
lint: install
	$(PY) -m ruff check src tests benchmarks labs/scripts
	$(PY) -m mypy

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

book: install-book
	$(VENV)/bin/commlab book build --execute --out _build/html $(BOOK_FLAGS)

benchmarks: install
	for script in benchmarks/*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

clean:
	rm -rf _build tests/browser/output .pytest_cache .mypy_cache .ruff_cache
