"""experiments.unlabeled_value: the vmapped fit over gammas, paired differences, a smoke run."""

import json
import math
import subprocess
import sys

import jax
import numpy as np
import pytest

import qsg_jax
from experiments import reporting
from experiments import unlabeled_value as uv
from experiments import unlabeled_value_report as report
from tests.conftest import REPO_ROOT


def _toy(seed=0, n_l=24, n_u=60, n_e=40, d=3, k=2):
  rng = np.random.default_rng(seed)
  x = rng.uniform(size=(n_l + n_u + n_e, d)).astype(np.float32)
  t = x[:, 0] + 0.3 * rng.normal(size=x.shape[0])
  y = np.searchsorted(np.quantile(t, np.arange(1, k) / k), t).astype(np.int64)
  y[:k] = np.arange(k)
  return x[:n_l], y[:n_l], x[n_l:n_l + n_u], x[n_l + n_u:]


@pytest.mark.parametrize("num_classes,step_size", [(2, "auto"), (3, "auto"), (2, 0.5)])
def test_fit_over_gammas_equals_separate_fits(num_classes, step_size):
  x_l, y_l, x_u, x_e = _toy(k=num_classes)
  key = jax.random.key(7)
  gammas = [0.0, 0.5, 1.0]
  kwargs = dict(num_classes=num_classes, sigma=2.0, lam=1e-3, step_size=step_size, num_steps=64,
                num_frequencies=8, unlabeled_batch_size=16)
  out = uv.fit_over_gammas(x_l, y_l, x_u, x_e, key=key, gammas=gammas, **kwargs)
  assert not out["diverged"].any()
  for g, gamma in enumerate(gammas):
    result = qsg_jax.fit(x_l, y_l, x_u, key=key, gamma=gamma, **kwargs)
    single = qsg_jax.decision_function(result, x_e)
    # The step of run g is the one fit chose for that gamma ("auto" depends on gamma).
    np.testing.assert_allclose(out["eta0"][g], result.metrics["eta"][0], rtol=1e-6)
    # Float32 rounding: vmapped reductions may add in another order.
    np.testing.assert_allclose(out["scores"][g], single, rtol=1e-4,
                               atol=1e-5 * float(np.abs(single).max()))
  # The gammas really differ (the unlabeled term is used).
  assert np.abs(out["scores"][0] - out["scores"][2]).max() > 1e-3


def test_fit_over_gammas_reports_divergence():
  x_l, y_l, x_u, x_e = _toy()
  out = uv.fit_over_gammas(x_l, y_l, x_u, x_e, key=jax.random.key(0), gammas=[0.0, 1.0],
                           num_classes=2, sigma=2.0, lam=1e-3, step_size=1e4, num_steps=32,
                           num_frequencies=8, unlabeled_batch_size=16)
  assert out["diverged"].all()
  assert all("diverged" in m for m in out["messages"])
  assert np.isnan(out["scores"]).all()


def test_paired_difference_by_hand():
  mean, se, n = report.paired_difference([0.8, 0.9, np.nan, 0.7], [0.7, 0.7, 0.7, 0.75])
  diffs = np.array([0.1, 0.2, -0.05])
  assert n == 3
  np.testing.assert_allclose(mean, diffs.mean())
  np.testing.assert_allclose(se, diffs.std(ddof=1) / np.sqrt(3))
  assert report.verdict(0.1, 0.01) == "helps"
  assert report.verdict(-0.1, 0.01) == "hurts"
  assert report.verdict(0.01, 0.01) == "no difference"


def test_plan_sizes_skips_what_the_data_cannot_do():
  absent = math.comb(50, 10) / math.comb(100, 10)      # one class of 50 missing from 10 drawn
  assert uv.cover_probability([50, 50], 100, 10) == pytest.approx((1 - absent)**2)
  assert uv.cover_probability([99, 1], 100, 10) == pytest.approx(0.1)   # the single point drawn


# A tiny configuration: one CV point, 16 steps of 4 frequencies.
_TINY = dict(eval_size=0, cv_lam=[1e-3], cv_sigma=[0.5], cv_folds=2, num_steps=16,
             num_frequencies=4, unlabeled_batch_size=8)


def test_smoke_run_writes_files_and_correct_differences(tmp_path):
  gammas = [0.0, 0.5, 1.0]
  settings = dict(labeled_sizes=[20, 400], gammas=gammas, unlabeled_sizes=[50], trials=2,
                  **_TINY)
  flags = [f"--{name}=" + (",".join(map(str, value)) if isinstance(value, list) else str(value))
           for name, value in settings.items()]
  proc = subprocess.run([sys.executable, "-m", "experiments.unlabeled_value",
                         "--datasets=breast_cancer", f"--output_dir={tmp_path}", "--noprogress",
                         *flags], cwd=REPO_ROOT, text=True, capture_output=True, check=False)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  assert "breast_cancer done" in proc.stdout
  out = tmp_path / "breast_cancer"
  for name in ("unlabeled_value.json", "unlabeled_value.md", "unlabeled_value.csv",
               "unlabeled_value.png", "settings.json", "cv/nl_00020.json"):
    assert (out / name).exists(), name
  assert (tmp_path / "unlabeled_value.md").exists()
  assert (tmp_path / "unlabeled_value.json").exists()
  stored = json.loads((out / "unlabeled_value.json").read_text())
  assert stored["labeled_sizes"] == [20]
  assert [s["num_labeled"] for s in stored["skipped"]] == [400]
  cells = stored["cells"]
  assert len(cells) == 2 and {c["num_unlabeled"] for c in cells} == {50}
  # The differences by hand from the per-trial AUCs in the json.
  for row in stored["rows"]:
    mine = sorted((c for c in cells if c["num_unlabeled"] == row["num_unlabeled"]),
                  key=lambda c: c["trial"])
    g = gammas.index(row["gamma"])
    diffs = np.array([c["auc"][g] - c["auc"][2] for c in mine])
    assert row["pairs"] == 2
    np.testing.assert_allclose(row["diff_mean"], diffs.mean(), atol=1e-12)
    if row["gamma"] != 1.0:
      np.testing.assert_allclose(row["diff_se"], diffs.std(ddof=1) / np.sqrt(2), atol=1e-12)
    np.testing.assert_allclose(row["auc_mean"], np.mean([c["auc"][g] for c in mine]))
  # A rerun resumes from the finished cells (same numbers, nothing retrained).
  before = {p.name: p.stat().st_mtime_ns for p in (out / "cells").iterdir()}
  again = uv.run_study(["breast_cancer"], output_dir=str(tmp_path), log=lambda line: None,
                       **settings)
  assert {p.name: p.stat().st_mtime_ns for p in (out / "cells").iterdir()} == before
  assert again[0]["rows"] == stored["rows"]
  with pytest.raises(ValueError, match="other settings"):
    uv.run_study(["breast_cancer"], output_dir=str(tmp_path), log=lambda line: None,
                 labeled_sizes=[20], gammas=gammas, trials=1, **dict(_TINY, num_steps=32))


def test_unlabeled_sizes_are_nested_and_capped():
  assert uv.unlabeled_sizes_of([1000, "all", 50, 10**6], 300) == [50, 300]


def test_gammas_must_include_one(tmp_path):
  with pytest.raises(ValueError, match="must contain 1.0"):
    uv.run_study(["breast_cancer"], output_dir=str(tmp_path), gammas=[0.0, 0.5])


def test_summary_of_a_gamma_that_always_diverged():
  cells = [{"num_labeled": 10, "num_unlabeled": 5, "trial": t, "gammas": [0.0, 1.0],
            "auc": [None, 0.7 + 0.1 * t], "diverged": [True, False]} for t in range(2)]
  rows = report.summarize(cells, [0.0, 1.0])
  assert rows[0]["diverged"] == 2 and rows[0]["pairs"] == 0 and rows[0]["verdict"] == "n/a"
  # Read back from JSON (NaN stored as None), the table still renders.
  table = report.table_rows(json.loads(json.dumps(reporting.jsonable(rows))))
  assert table[0]["gamma=0"] == "nan / n/a" and table[0]["diverged"] == "2,0"


def test_figures_can_be_redrawn_from_the_published_tables(tmp_path):
  rows = report.summarize([
      {"num_labeled": 50, "num_unlabeled": 900, "trial": t, "gammas": [0.0, 1.0],
       "auc": [a, b], "diverged": [False, False]}
      for t, (a, b) in enumerate([(0.81, 0.80), (0.86, 0.83), (None, 0.9)])], [0.0, 1.0])
  table = report.table_rows(rows)
  lines = ["### toy (ordinal AUC on the unlabeled training points, k = 3)", "",
           "| " + " | ".join(table[0]) + " |", "|" + "---|" * len(table[0])]
  lines += ["| " + " | ".join(str(v) for v in row.values()) + " |" for row in table]
  metric, parsed = report.rows_from_report("\n".join(lines))["toy"]
  assert metric == "ordinal AUC" and [r["gamma"] for r in parsed] == [0.0, 1.0]
  assert parsed[0]["diff_mean"] == pytest.approx(0.02, abs=1e-4)     # (0.01 + 0.03) / 2
  assert parsed[0]["diff_se"] == pytest.approx(0.01, abs=1e-4)       # std 0.01414 / sqrt(2)
  assert parsed[1]["diff_mean"] == 0.0 and parsed[1]["trials"] == 3
  assert report.plot_dataset(parsed, "toy", metric, tmp_path / "toy.png").exists()
