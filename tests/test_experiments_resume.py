"""``--resume`` in the experiment scripts other than the main job (``common.store.RunStore``).

A run is interrupted after its first unit of work, refused when started again without
``--resume``, then resumed: it reuses the finished unit (same number), computes the others, and
ends with the uninterrupted run's rows and a complete manifest. The fits themselves are replaced
by counters so that the test exercises the bookkeeping, not the methods.
"""

import dataclasses
import json
import types

import jax
import numpy as np
import pytest

from experiments import auc_comparison
from experiments import roc_svm_tables
from experiments import roc_svm_theorem4
from experiments import split_corrections
from experiments import timing_vs_unlabeled as timing
from experiments.common import reporting
from experiments.common import store as store_lib

_QUIET = lambda line: None


def _fake_time_fit(interrupt_at=None):
  calls = []

  def time_fit(fit, x_l, y_l, x_u, rerun_below_s):
    del fit, x_l, y_l, rerun_below_s
    calls.append(x_u.shape[0])
    if len(calls) == interrupt_at:
      raise KeyboardInterrupt("killed")
    return float(len(calls)), float(len(calls)) + 0.5
  return time_fit, calls


def test_timing_run_killed_after_one_fit_resumes_to_the_uninterrupted_rows(tmp_path, monkeypatch):
  settings = timing.Settings(datasets=("lev",), sizes=(100,), full=False, exact_cap_ordinal=100,
                             rerun_below_s=0.0, num_labeled=60, num_steps=64, num_frequencies=8,
                             output_dir=str(tmp_path / "whole"))
  rows = lambda out: [(r["method"], r["train_time_s"], r["status"]) for r in json.loads(
      (out / "timing_vs_unlabeled.json").read_text())["rows"]]
  monkeypatch.setattr(timing, "time_fit", _fake_time_fit()[0])
  timing.run(settings, log=_QUIET)

  out = tmp_path / "killed"
  killed = dataclasses.replace(settings, output_dir=str(out))
  monkeypatch.setattr(timing, "time_fit", _fake_time_fit(interrupt_at=2)[0])
  with pytest.raises(KeyboardInterrupt):
    timing.run(killed, log=_QUIET)
  assert len(list((out / "cells" / "timing_vs_unlabeled").glob("*.json"))) == 1
  manifest = json.loads((out / "timing_vs_unlabeled.json").read_text())
  assert manifest["complete"] is False and manifest["cells_done"] == 1
  with pytest.raises(store_lib.StoreError, match="pass --resume"):
    timing.run(killed, log=_QUIET)
  with pytest.raises(store_lib.StoreError, match="sizes"):
    timing.run(dataclasses.replace(killed, resume=True, sizes=(50,)), log=_QUIET)

  fake, calls = _fake_time_fit()
  monkeypatch.setattr(timing, "time_fit", fake)
  timing.run(dataclasses.replace(killed, resume=True), log=_QUIET)
  assert len(calls) == 2                                   # the first fit was not run again
  whole, resumed = rows(tmp_path / "whole"), rows(out)
  assert [(m, s) for m, _, s in resumed] == [(m, s) for m, _, s in whole]
  # The first fit's time is the interrupted run's; the other two were timed after resuming.
  assert [t for _, t, _ in resumed] == [1.0, 1.0, 2.0]
  assert json.loads((out / "timing_vs_unlabeled.json").read_text())["complete"] is True
  assert not [p for p in out.rglob("*") if p.name.startswith(reporting.TEMP_PREFIX)]
  # A finished run is replaced only when asked.
  with pytest.raises(store_lib.StoreError, match="--overwrite"):
    timing.run(killed, log=_QUIET)
  timing.run(dataclasses.replace(killed, overwrite=True), log=_QUIET)


class _FakeTrials:
  """Stands in for the timed ROC-SVM fits: a fit's 'AUC' is a checksum of its test split, so a
  resumed run equals the uninterrupted one only if it replays the same splits."""

  def __init__(self, interrupt_at=None):
    self.fits, self.interrupt_at = 0, interrupt_at

  def select(self, x, y, grid, cv_folds, seed, **kwargs):
    del x, y, cv_folds, seed, kwargs
    return dict(grid[-1]), [0.5] * len(grid)

  def timed_fit(self, x, y, **kwargs):
    del kwargs
    self.fits += 1
    if self.fits == self.interrupt_at:
      raise KeyboardInterrupt("killed")
    return types.SimpleNamespace(num_steps=x.shape[0]), 0.25, 0.5

  def auc_percent(self, result, x, y):
    del result
    return float(np.sum(x) + np.sum(y))


def _fake_loader(name, data_dir):
  del data_dir
  rng = np.random.default_rng(len(name))
  return types.SimpleNamespace(x=rng.uniform(size=(300, 3)), y=rng.integers(0, 2, 300))


@pytest.mark.parametrize("table", [1, 3])
def test_roc_svm_tables_killed_mid_way_resume_to_the_uninterrupted_numbers(tmp_path, monkeypatch,
                                                                           table):
  def run(out, fake, resume=False):
    for name in ("select", "timed_fit", "auc_percent"):
      monkeypatch.setattr(roc_svm_tables.roc, name, getattr(fake, name))
    store = store_lib.RunStore(out, "roc_svm_tables")
    store.start({"table": table}, resume=resume)
    if table == 1:
      _, payload = roc_svm_tables.run_table1(
          sizes=(200,), repetitions=3, n_test=100, lam_grid=(1e-3, 1e-2),
          population_samples=1000, log=_QUIET, store=store)
    else:
      _, payload = roc_svm_tables.run_table3(
          datasets=("a", "bb"), splits=3, loader=_fake_loader, log=_QUIET, num_landmarks=5,
          store=store)
    store.finish()
    return payload["raw"]

  whole = run(tmp_path / "whole", _FakeTrials())
  with pytest.raises(KeyboardInterrupt):
    run(tmp_path / "killed", _FakeTrials(interrupt_at=4))
  resumed = _FakeTrials()
  assert json.dumps(run(tmp_path / "killed", resumed, resume=True)) == json.dumps(whole)
  assert resumed.fits == (3 * 3 - 3 if table == 1 else 2 * 3 * 2 - 3)   # only what was missing


class _FakeComparison:
  """Stands in for the methods' CV and fits: a fit's 'AUC' is a checksum of its training and
  evaluation data and of its key, so a resumed run equals the uninterrupted one only if it
  replays the same splits, subsets and keys."""

  def __init__(self, interrupt_at=None):
    self.fits, self.selections, self.interrupt_at = 0, 0, interrupt_at

  def select_hyperparams(self, method, cv_data, k, settings):
    del k, settings
    self.selections += 1
    best = {"lam": float(np.sum(cv_data[0]) % 1), "gamma": [0.25, 0.5]}
    return best, {"method": method, "cv": "fake", "best": best, "best_score": 0.75}

  def fit_and_score(self, method, best, k, train, evals, settings, key):
    del method, k, settings
    self.fits += 1
    if self.fits == self.interrupt_at:
      raise KeyboardInterrupt("killed")
    assert best["gamma"] == [0.25, 0.5]           # the CV's choice, as JSON gives it back
    key_sum = float(np.sum(np.asarray(jax.random.key_data(key)) % 997))
    data_sum = sum(float(np.sum(a)) for a in train) + key_sum + best["lam"]
    return [(data_sum + float(np.sum(x) + np.sum(y)), 4) for x, y in evals], 0.125, "ok"


def test_auc_comparison_killed_mid_way_resumes_to_the_uninterrupted_rows(tmp_path, monkeypatch):
  base = auc_comparison.Settings(datasets=("lev",), trials=3, num_labeled=60, common_size=100,
                                 eval_size=150, exact_qsg=False, progress=False)

  def run(out, fake, **more):
    monkeypatch.setattr(auc_comparison.cm, "select_hyperparams", fake.select_hyperparams)
    monkeypatch.setattr(auc_comparison.cm, "fit_and_score", fake.fit_and_score)
    return auc_comparison.run(dataclasses.replace(base, output_dir=str(out), **more),
                              log=_QUIET)

  whole = run(tmp_path / "whole", _FakeComparison())
  out = tmp_path / "killed"
  # 4 methods, 2 QSG settings (common and full): 5 fits per trial; killed at the second trial's
  # third.
  with pytest.raises(KeyboardInterrupt):
    run(out, _FakeComparison(interrupt_at=8))
  assert json.loads((out / "auc_comparison.json").read_text())["complete"] is False
  assert sorted(p.stem for p in (out / "cells" / "auc_comparison").glob("*.json")) == sorted(
      [f"lev-cv-{m}" for m in auc_comparison.cm.ORDINAL_METHODS] + ["lev-trial-0"])
  with pytest.raises(store_lib.StoreError, match="pass --resume"):
    run(out, _FakeComparison())
  with pytest.raises(store_lib.StoreError, match="trial_seeds"):
    run(out, _FakeComparison(), resume=True, trial_seeds="offset")

  resumed = _FakeComparison()
  payload = run(out, resumed, resume=True)
  assert resumed.selections == 0 and resumed.fits == 2 * 5     # trials 1 and 2 only
  assert json.dumps(payload["rows"]) == json.dumps(whole["rows"])
  assert json.dumps(payload["cv"]) == json.dumps(whole["cv"])
  assert json.loads((out / "auc_comparison.json").read_text())["complete"] is True
  assert not [p for p in out.rglob("*") if p.name.startswith(reporting.TEMP_PREFIX)]
  # Each trial is its own: no two trials (nor the seed-1 run's trials) share a split.
  sums = [r["auc"] for r in whole["rows"] if r["method"] == "SVOREX"]
  other = run(tmp_path / "seed1", _FakeComparison(), seed=1)
  assert len(set(sums + [r["auc"] for r in other["rows"] if r["method"] == "SVOREX"])) == 12


class _Interrupter:
  """Counts calls; raises KeyboardInterrupt at call ``interrupt_at``."""

  def __init__(self, interrupt_at=None):
    self.calls, self.interrupt_at = 0, interrupt_at

  def tick(self):
    self.calls += 1
    if self.calls == self.interrupt_at:
      raise KeyboardInterrupt("killed")


def test_theorem4_killed_mid_way_resumes_to_the_uninterrupted_rows(tmp_path, monkeypatch):
  def run(out, counter, resume=False):
    def measure(n, rep, ds, sigma, lam, seed, log):
      del ds, log
      counter.tick()
      return [{"n": n, "rep": rep, "gap": sigma * lam * (seed + n + 10 * rep)}]
    monkeypatch.setattr(roc_svm_theorem4, "_measure", measure)
    monkeypatch.setattr(roc_svm_theorem4, "plot", lambda rows, path: None)
    return roc_svm_theorem4.run(roc_svm_theorem4.Settings(
        sizes=(100, 200), repetitions=2, output_dir=str(out), resume=resume), log=_QUIET)

  whole = run(tmp_path / "whole", _Interrupter())
  with pytest.raises(KeyboardInterrupt):
    run(tmp_path / "killed", _Interrupter(interrupt_at=3))
  resumed = _Interrupter()
  assert run(tmp_path / "killed", resumed, resume=True) == whole
  assert resumed.calls == 2


def test_split_corrections_killed_mid_way_resumes_to_the_uninterrupted_rows(tmp_path,
                                                                            monkeypatch):
  base = split_corrections.Settings(dataset="lev", trials=3, common_size=100, timing_sizes=(50,),
                                    timing_exact_size=0)

  def run(out, counter, resume=False):
    def fit_method(method, train, k, key, settings, params):
      del k, settings
      counter.tick()
      total = sum(float(np.sum(a)) for a in train) + len(method) + params["lam"]
      total += float(np.sum(np.asarray(jax.random.key_data(key)) % 997))
      return (lambda x: np.full((x.shape[0], 4), total)), 0.5
    monkeypatch.setattr(split_corrections, "fit_method", fit_method)
    monkeypatch.setattr(split_corrections.baselines, "mean_split_auc",
                        lambda scores, y, k: float(scores[0, 0]))
    monkeypatch.setattr(split_corrections, "cross_validate_split",
                        lambda cv_data, k, settings, log: (counter.tick() or {
                            "lam": 1e-3, "sigma": 0.125, "gamma": 1.0,
                            "split_lam": float("inf")}, [{"cv_auc": 0.5}]))
    monkeypatch.setattr(split_corrections, "run_timing",
                        lambda *args, **kwargs: counter.tick() or [{"method": "x"}])
    return split_corrections.run(dataclasses.replace(base, output_dir=str(out), resume=resume),
                                 log=_QUIET)

  whole = run(tmp_path / "whole", _Interrupter())
  # CV (1), trial 0 (2-4), trial 1 killed at its second fit (6).
  with pytest.raises(KeyboardInterrupt):
    run(tmp_path / "killed", _Interrupter(interrupt_at=6))
  assert sorted(p.stem for p in (tmp_path / "killed" / "cells" / "split_corrections").glob(
      "*.json")) == ["cv", "trial-0"]
  resumed = _Interrupter()
  payload = run(tmp_path / "killed", resumed, resume=True)
  assert resumed.calls == 2 * 3 + 1                      # trials 1 and 2, then the timing
  assert json.dumps(payload["rows"]) == json.dumps(whole["rows"])
  assert payload["chosen"]["split_lam"] == float("inf")
