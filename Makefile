# Every target assumes the repository root as working directory.
PYTHON ?= python
QSG_JAX_DATA ?= $(abspath ../shared/data)
export QSG_JAX_DATA

.PHONY: install run run-sgemm test test-slow bench

install:
	$(PYTHON) -m pip install -e .

run:
	$(PYTHON) -m experiments.run

run-sgemm:
	$(PYTHON) -m experiments.run --dataset=sgemm

test:
	$(PYTHON) -m pytest -q

test-slow:
	$(PYTHON) -m pytest -q -m slow

bench:
	$(PYTHON) -m experiments.bench_engine
