# Every target assumes the repository root as working directory.
PYTHON ?= python
QSG_JAX_DATA ?= $(abspath ../shared/data)
export QSG_JAX_DATA
OUT ?= results
# Extra flags for every experiment target, e.g. `make reproduce-auc ARGS=--resume` to continue an
# interrupted run, or ARGS=--overwrite to replace a finished one (never replaced otherwise).
ARGS ?=

.PHONY: help install run run-sgemm run-sgemm-cv test test-slow test-multidevice bench bench-all \
	bench-roc-svm bench-online-pairwise bench-cv bench-multiprocess select-step convergence \
	reproduce-timing reproduce-auc reproduce-roc-svm reproduce-online-pairwise reproduce \
	reproduce-unlabeled docs

# The default target: the list of targets (a bare `make` changes nothing).
help:
	@echo "make install | run | run-sgemm | run-sgemm-cv | test | test-slow | test-multidevice | docs"
	@echo "make bench | bench-all | bench-roc-svm | bench-online-pairwise | bench-cv | bench-multiprocess"
	@echo "make select-step | convergence | reproduce | reproduce-timing | reproduce-auc"
	@echo "make reproduce-roc-svm | reproduce-online-pairwise | reproduce-unlabeled"
	@echo "Variables: ARGS (extra flags, e.g. ARGS=--resume), OUT (results folder; make run writes"
	@echo "results/DATASET: pass ARGS=--output_dir=...), QSG_JAX_DATA (default ../shared/data), PYTHON."

install:
	$(PYTHON) -m pip install -e ".[test]"

run:
	$(PYTHON) -m experiments.run $(ARGS)

run-sgemm:
	$(PYTHON) -m experiments.run --dataset=sgemm --output_dir=$(OUT)/sgemm $(ARGS)

run-sgemm-cv:
	$(PYTHON) -m experiments.run --dataset=sgemm --cv=paper --output_dir=$(OUT)/sgemm_cv $(ARGS)

test:
	$(PYTHON) -m pytest -q

# HTML API reference generated from the docstrings (pdoc, the `docs` extra) into build/docs
# (ignored); open build/docs/index.html. Modules setting __docformat__ = "numpy" (the estimators)
# are read as numpydoc, the others as Google style.
docs:
	@$(PYTHON) -c "import pdoc" 2>/dev/null || { echo "make docs needs pdoc, the docs extra: pip install -e '.[docs]'"; exit 1; }
	$(PYTHON) -m pdoc --docformat google --output-directory build/docs qsg_jax

test-slow:
	$(PYTHON) -m pytest -q -m slow

test-multidevice:
	$(PYTHON) -m pytest -q tests/test_sharding.py

# Benchmarks print ratios measured side by side in one run.
bench:
	$(PYTHON) -m experiments.bench_engine --output_dir=$(OUT)/bench_engine $(ARGS)

bench-roc-svm:
	$(PYTHON) -m experiments.bench_roc_svm --output_dir=$(OUT)/roc_svm $(ARGS)

bench-online-pairwise:
	$(PYTHON) -m experiments.bench_online_pairwise --output_dir=$(OUT)/online_pairwise $(ARGS)

bench-cv:
	$(PYTHON) -m experiments.bench_cv --output_dir=$(OUT)/bench_cv $(ARGS)

bench-multiprocess:
	$(PYTHON) -m experiments.bench_multiprocess --output_dir=$(OUT)/bench_multiprocess $(ARGS)

select-step:
	$(PYTHON) -m experiments.select_step --output_dir=$(OUT)/select_step $(ARGS)

bench-all: bench bench-roc-svm bench-online-pairwise bench-cv bench-multiprocess

# Reproductions (see experiments/reproduction/*.md for run times and our numbers).
convergence:
	$(PYTHON) -m experiments.convergence --output_dir=$(OUT)/convergence $(ARGS)

reproduce-timing:
	$(PYTHON) -m experiments.timing_vs_unlabeled --output_dir=$(OUT)/timing $(ARGS)

reproduce-auc:
	$(PYTHON) -m experiments.auc_comparison --output_dir=$(OUT)/auc $(ARGS)

reproduce-roc-svm:
	$(PYTHON) -m experiments.roc_svm_tables --table=1,2,3 --output_dir=$(OUT)/roc_svm $(ARGS)

reproduce-online-pairwise:
	$(PYTHON) -m experiments.online_pairwise_rate --output_dir=$(OUT)/online_pairwise $(ARGS)

# The value of unlabeled data: AUC(gamma) - AUC(1), paired over trials (hours on 2 CPU cores;
# ARGS=--resume continues from the finished cells). See experiments/reproduction/unlabeled_value.md.
reproduce-unlabeled:
	$(PYTHON) -m experiments.unlabeled_value --datasets=lev,era,swd,esl,breast_cancer \
		--trials=10 --output_dir=$(OUT)/unlabeled_value $(ARGS)
	$(PYTHON) -m experiments.unlabeled_value \
		--datasets=cod_rna,ijcnn1,skin,bank_marketing,accelerometer --trials=10 \
		--output_dir=$(OUT)/unlabeled_value $(ARGS)
	$(PYTHON) -m experiments.unlabeled_value --datasets=sgemm --trials=10 \
		--unlabeled_sizes=1000,10000,all --output_dir=$(OUT)/unlabeled_value $(ARGS)

reproduce: convergence reproduce-timing reproduce-auc reproduce-roc-svm reproduce-online-pairwise
