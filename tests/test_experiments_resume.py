"""``--resume`` in the experiment scripts other than the main job (``run_store.CellStore``).

A run is interrupted after its first unit of work, refused when started again without
``--resume``, then resumed: it reuses the finished unit (same number), computes the others, and
ends with the uninterrupted run's rows and a complete manifest. The fits themselves are replaced
by counters so that the test exercises the bookkeeping, not the methods.
"""

import json
import types

import jax
import numpy as np
import pytest

from experiments import auc_comparison
from experiments import reporting
from experiments import roc_svm_real_data
from experiments import roc_svm_tables
from experiments import roc_svm_theorem4
from experiments import run_store
from experiments import split_corrections
from experiments import timing_vs_unlabeled as timing

_TIMING_ARGS = dict(sizes=[100], include_full=False, exact_cap_ordinal=100, rerun_below_s=0.0,
                    num_labeled=60, params=dict(num_steps=64, num_frequencies=8),
                    log=lambda line: None)


def _fake_time_fit(interrupt_at=None):
  calls = []

  def time_fit(fit, x_l, y_l, x_u, rerun_below_s):
    del fit, x_l, y_l, rerun_below_s
    calls.append(x_u.shape[0])
    if len(calls) == interrupt_at:
      raise KeyboardInterrupt("killed")
    return float(len(calls)), float(len(calls)) + 0.5
  return time_fit, calls


def _timing_rows(path):
  return [(r["method"], r["train_time_s"], r["status"])
          for r in json.loads((path / "timing_vs_unlabeled.json").read_text())["rows"]]


def test_timing_run_killed_after_one_fit_resumes_to_the_uninterrupted_rows(tmp_path, monkeypatch):
  fake, _ = _fake_time_fit()
  monkeypatch.setattr(timing, "time_fit", fake)
  timing.run_timing(["lev"], output_dir=str(tmp_path / "whole"), **_TIMING_ARGS)

  out = tmp_path / "killed"
  fake, calls = _fake_time_fit(interrupt_at=2)
  monkeypatch.setattr(timing, "time_fit", fake)
  with pytest.raises(KeyboardInterrupt):
    timing.run_timing(["lev"], output_dir=str(out), **_TIMING_ARGS)
  assert len(list((out / "cells").glob("*.json"))) == 1
  manifest = json.loads((out / "run.json").read_text())
  assert manifest["complete"] is False and manifest["trials_done"] == 1
  assert not (out / "timing_vs_unlabeled.json").exists()
  with pytest.raises(run_store.ResumeError, match="pass --resume"):
    timing.run_timing(["lev"], output_dir=str(out), **_TIMING_ARGS)
  with pytest.raises(run_store.ResumeError, match="sizes"):
    timing.run_timing(["lev"], output_dir=str(out), resume=True,
                      **dict(_TIMING_ARGS, sizes=[50]))

  fake, calls = _fake_time_fit()
  monkeypatch.setattr(timing, "time_fit", fake)
  timing.run_timing(["lev"], output_dir=str(out), resume=True, **_TIMING_ARGS)
  assert len(calls) == 2                                   # the first fit was not run again
  whole, resumed = _timing_rows(tmp_path / "whole"), _timing_rows(out)
  assert [(m, s) for m, _, s in resumed] == [(m, s) for m, _, s in whole]
  # The first fit's time is the interrupted run's; the other two were timed after resuming.
  assert [t for _, t, _ in resumed] == [1.0, 1.0, 2.0]
  assert json.loads((out / "run.json").read_text())["complete"] is True
  assert not [p for p in out.rglob("*") if p.name.startswith(reporting.TEMP_PREFIX)]
  # A complete run may be replaced by a new one without --resume.
  timing.run_timing(["lev"], output_dir=str(out), **_TIMING_ARGS)


def test_cell_store_returns_the_same_values_fresh_and_resumed(tmp_path):
  store = run_store.CellStore(tmp_path)
  store.start({"a": 1}, resume=False)
  fresh = store.cached("x/1", lambda: {"v": float("nan"), "w": [1, 2.5], "n": None})
  assert store.cached("x/1", lambda: pytest.fail("computed twice")) is fresh
  resumed = run_store.CellStore(tmp_path)
  assert list(resumed.start({"a": 1}, resume=True)) == ["x_1"]
  again = resumed.cached("x/1", lambda: pytest.fail("computed on resume"))
  assert json.dumps(again) == json.dumps(fresh)            # NaN kept, not turned into null
  with pytest.raises(run_store.ResumeError, match="a: the stored run has 1, this one 2"):
    run_store.CellStore(tmp_path).start({"a": 2}, resume=True)


class _FakeTrials:
  """Stands in for ``roc_svm_trials``: a fit's 'AUC' is a checksum of its test split, so a
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
  def run(out, resume=False):
    store = run_store.CellStore(out)
    store.start({"table": table}, resume)
    if table == 1:
      _, payload = roc_svm_tables.run_table1(
          sizes=(200,), repetitions=3, n_test=100, lam_grid=(1e-3, 1e-2),
          population_samples=1000, log=lambda line: None, store=store)
    else:
      _, payload = roc_svm_real_data.run_table3(
          datasets=("a", "bb"), splits=3, loader=_fake_loader, log=lambda line: None,
          num_landmarks=5, store=store)
    store.finish_cells()
    return payload["raw"]

  monkeypatch.setattr(roc_svm_tables, "trials", _FakeTrials())
  monkeypatch.setattr(roc_svm_real_data, "trials", _FakeTrials())
  whole = run(tmp_path / "whole")
  killed = _FakeTrials(interrupt_at=4)
  monkeypatch.setattr(roc_svm_tables, "trials", killed)
  monkeypatch.setattr(roc_svm_real_data, "trials", killed)
  with pytest.raises(KeyboardInterrupt):
    run(tmp_path / "killed")
  resumed = _FakeTrials()
  monkeypatch.setattr(roc_svm_tables, "trials", resumed)
  monkeypatch.setattr(roc_svm_real_data, "trials", resumed)
  assert json.dumps(run(tmp_path / "killed", resume=True)) == json.dumps(whole)
  assert resumed.fits == (3 * 3 - 3 if table == 1 else 2 * 3 * 2 - 3)   # only what was missing


class _FakeComparison:
  """Stands in for ``comparison_methods``' CV and fits: a fit's 'AUC' is a checksum of its
  training and evaluation data and of its key, so a resumed run equals the uninterrupted one
  only if it replays the same splits, subsets and keys."""

  def __init__(self, interrupt_at=None):
    self.fits, self.selections, self.interrupt_at = 0, 0, interrupt_at

  def select_hyperparams(self, method, cv_data, k, args):
    del k, args
    self.selections += 1
    best = {"lam": float(np.sum(cv_data[0]) % 1), "gamma": [0.25, 0.5]}
    return best, {"method": method, "cv": "fake", "best": best, "best_score": 0.75}

  def fit_and_score(self, method, best, k, train, evals, args, key):
    del method, k, args
    self.fits += 1
    if self.fits == self.interrupt_at:
      raise KeyboardInterrupt("killed")
    assert best["gamma"] == [0.25, 0.5]           # the CV's choice, as JSON gives it back
    key_sum = float(np.sum(np.asarray(jax.random.key_data(key)) % 997))
    data_sum = sum(float(np.sum(a)) for a in train) + key_sum + best["lam"]
    return [(data_sum + float(np.sum(x) + np.sum(y)), 4) for x, y in evals], 0.125, "ok"


def test_auc_comparison_killed_mid_way_resumes_to_the_uninterrupted_rows(tmp_path, monkeypatch):
  settings = dict(trials=3, num_labeled=60, common_size=100, eval_size=150, exact_qsg=False,
                  log=lambda line: None)

  def run(out, fake, resume=False, **more):
    monkeypatch.setattr(auc_comparison.cm, "select_hyperparams", fake.select_hyperparams)
    monkeypatch.setattr(auc_comparison.cm, "fit_and_score", fake.fit_and_score)
    return auc_comparison.run_comparison(["lev"], output_dir=str(out), resume=resume,
                                         **dict(settings, **more))

  whole = run(tmp_path / "whole", _FakeComparison())
  out = tmp_path / "killed"
  # 4 methods, 2 QSG settings (common and full): 5 fits per trial; killed at the second trial's
  # third.
  with pytest.raises(KeyboardInterrupt):
    run(out, _FakeComparison(interrupt_at=8))
  manifest = json.loads((out / "run.json").read_text())
  assert manifest["complete"] is False
  assert sorted(p.stem for p in (out / "cells").glob("*.json")) == sorted(
      [f"lev-cv-{m}" for m in auc_comparison.cm.ORDINAL_METHODS] + ["lev-trial-0"])
  assert not (out / "auc_comparison.json").exists()
  with pytest.raises(run_store.ResumeError, match="pass --resume"):
    run(out, _FakeComparison())
  with pytest.raises(run_store.ResumeError, match="trial_seeds"):
    run(out, _FakeComparison(), resume=True, trial_seeds="offset")

  resumed = _FakeComparison()
  payload = run(out, resumed, resume=True)
  assert resumed.selections == 0 and resumed.fits == 2 * 5     # trials 1 and 2 only
  assert json.dumps(payload["rows"]) == json.dumps(whole["rows"])
  assert json.dumps(payload["cv"]) == json.dumps(whole["cv"])
  assert json.loads((out / "run.json").read_text())["complete"] is True
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
    store = run_store.CellStore(out)
    store.start({"sizes": [100, 200]}, resume)
    rows, _ = roc_svm_theorem4.run(sizes=(100, 200), repetitions=2, store=store)
    store.finish_cells()
    return rows

  whole = run(tmp_path / "whole", _Interrupter())
  with pytest.raises(KeyboardInterrupt):
    run(tmp_path / "killed", _Interrupter(interrupt_at=3))
  resumed = _Interrupter()
  assert run(tmp_path / "killed", resumed, resume=True) == whole
  assert resumed.calls == 2


def test_split_corrections_killed_mid_way_resumes_to_the_uninterrupted_rows(tmp_path,
                                                                            monkeypatch):
  settings = dict(dataset="lev", trials=3, common_size=100, timing_sizes=[50],
                  timing_exact_size=0, log=lambda line: None)

  def run(out, counter, resume=False):
    def fit_method(method, train, k, key, args, params):
      del k, args
      counter.tick()
      total = sum(float(np.sum(a)) for a in train) + len(method) + params["lam"]
      total += float(np.sum(np.asarray(jax.random.key_data(key)) % 997))
      return (lambda x: np.full((x.shape[0], 4), total)), 0.5
    monkeypatch.setattr(split_corrections, "fit_method", fit_method)
    monkeypatch.setattr(split_corrections, "split_auc", lambda scores, y, k: float(scores[0, 0]))
    monkeypatch.setattr(split_corrections, "cross_validate_split",
                        lambda cv_data, k, args, log: (counter.tick() or {
                            "lam": 1e-3, "sigma": 0.125, "gamma": 1.0,
                            "split_lam": float("inf")}, [{"cv_auc": 0.5}]))
    monkeypatch.setattr(split_corrections, "run_timing",
                        lambda *args, **kwargs: counter.tick() or [{"method": "x"}])
    return split_corrections.run(output_dir=str(out), resume=resume, **settings)

  whole = run(tmp_path / "whole", _Interrupter())
  # CV (1), trial 0 (2-4), trial 1 killed at its second fit (6).
  with pytest.raises(KeyboardInterrupt):
    run(tmp_path / "killed", _Interrupter(interrupt_at=6))
  assert sorted(p.stem for p in (tmp_path / "killed" / "cells").glob("*.json")) == [
      "cv", "trial-0"]
  resumed = _Interrupter()
  payload = run(tmp_path / "killed", resumed, resume=True)
  assert resumed.calls == 2 * 3 + 1                      # trials 1 and 2, then the timing
  assert json.dumps(payload["rows"]) == json.dumps(whole["rows"])
  assert payload["chosen"]["split_lam"] == float("inf")
