"""Smoke tests of experiments/split_corrections.py on tiny configurations."""

import json
import math
import subprocess
import sys

import pytest

from experiments import auc_comparison
from experiments import split_corrections
from experiments.common import methods
from experiments.common import protocols
from qsg_jax import data as data_lib
from tests.conftest import REPO_ROOT

TINY = dict(trials=1, common_size=200, num_steps=32, num_frequencies=8, cv_folds=2,
            cv_split_lam=(0.01, math.inf), cv_unlabeled=100, timing_sizes=(100,),
            timing_exact_size=150, timing_exact_gamma=0.5, timing_repeats=1)


def _run(tmp_path, **settings):
  return split_corrections.run(split_corrections.Settings(
      output_dir=str(tmp_path), dataset="lev", **settings), log=lambda _: None)


@pytest.mark.slow   # script smoke run: `make test-slow`
def test_script_without_timing_on_embedded_lev(tmp_path):
  payload = _run(tmp_path, **dict(TINY, cv_split_lam=(0.01,), timing_sizes=()))
  assert payload["chosen"]["split_lam"] == 0.01 and not payload["timing"]
  assert [c["check"] for c in payload["checks"]] == ["extended mean ordinal AUC >= M-SAMULT's"]
  assert all(0.5 < r["auc"] <= 1.0 for r in payload["rows"])


@pytest.mark.slow
def test_script_on_embedded_lev_matches_auc_comparison_trials(tmp_path):
  payload = _run(tmp_path, **TINY)
  assert [r["method"] for r in payload["summary"]] == list(split_corrections.METHODS)
  assert all(0.5 < r["auc"] <= 1.0 for r in payload["rows"])
  assert payload["chosen"]["split_lam"] in (0.01, math.inf)
  assert len(payload["cv"]) == 2 and {c["verdict"].split()[0] for c in payload["checks"]} <= {
      "pass", "fail"}
  assert {r["method"] for r in payload["timing"]} == {
      "QS3ORAO", "QS3ORAO+split", "M-SAMULT (gamma=1)", "M-SAMULT (gamma=0.5)"}
  assert json.loads((tmp_path / "split_corrections.json").read_text())["chosen"]
  assert (tmp_path / "split_corrections.md").read_text().startswith("# lev:")
  # Same trial, same QS3ORAO as experiments.auc_comparison's own code path.
  dataset = data_lib.load("lev")
  proto = protocols.protocol_for(dataset)
  seeds = protocols.comparison_trial_seeds(0, 0)   # the default --trial_seeds=fold_in
  x_l, y_l, x_u, y_u = split_corrections.trial_data(dataset, proto, seeds, 200)
  best = dict(lam=1e-3, sigma=0.125, gamma=1.0, step_size="auto")
  [(auc, _)], _, status = methods.fit_and_score(
      "QS3ORAO", best, proto.num_classes, (x_l, y_l, x_u), [(x_u, y_u)],
      auc_comparison.Settings(num_steps=32, num_frequencies=8), seeds.fit_key)
  mine = next(r["auc"] for r in payload["rows"] if r["method"] == "QS3ORAO")
  assert status == "ok" and mine == pytest.approx(auc, abs=1e-6)


def test_inf_split_lam_is_plain_qs3orao():
  assert split_corrections._split_lam(math.inf) is None    # pylint: disable=protected-access
  assert split_corrections._split_lam(0.01) == 0.01        # pylint: disable=protected-access


@pytest.mark.slow
def test_script_on_sgemm(tmp_path, shared_data_dir):
  proc = subprocess.run(
      [sys.executable, "-m", "experiments.split_corrections", f"--data_dir={shared_data_dir}",
       "--trials=1", "--common_size=500", "--num_steps=32", "--num_frequencies=8",
       "--cv_folds=2", "--cv_split_lam=0.01", "--timing_sizes=200", "--timing_exact_size=300",
       "--noprogress", f"--output_dir={tmp_path}"],
      cwd=REPO_ROOT, text=True, capture_output=True, check=False)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  assert "QS3ORAO+split" in proc.stdout and "check=" in proc.stdout
