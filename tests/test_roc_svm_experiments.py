"""Smoke tests of the ROC-SVM experiment scripts on tiny configurations.

Training sets have 250 points with at most 64 positives, like the model tests' data, so the
fits reuse the training loops those tests compiled (compilation dominates on CPU).
"""

import types

import jax
import numpy as np
import pytest

from experiments import bench_roc_svm
from experiments import roc_svm_tables
from experiments import roc_svm_theorem4
from experiments.common import roc_svm as roc
from qsg_jax.roc_svm import synthetic


def _quiet(*args):
  del args


@pytest.mark.slow   # reproduction smoke run: `make test-slow`
def test_table1_and_table2_write_the_paper_layout(tmp_path):
  rows, payload = roc_svm_tables.run_table1(
      sizes=(250,), repetitions=1, n_test=5000, lam_grid=(1e-3,), population_samples=400000,
      log=_quiet)
  assert [r["n_train"] for r in rows] == ["250"]
  raw = payload["raw"][250]
  assert len(raw["inc_auc"]) == len(raw["full_auc"]) == len(raw["sorted_auc"]) == 1
  assert raw["cv"][0]["best"] == {"lam": 1e-3}
  assert 80.0 < raw["inc_auc"][0] <= 100.0 and abs(raw["full_auc"][0] - raw["sorted_auc"][0]) < 0.1
  assert 89.0 < payload["population_auc_percent"][0] < 92.5          # 90.78 by quadrature
  checks = {c["check"]: c for c in payload["checks"]}
  assert set(checks) == {"|AUC full (streamed) - AUC incomplete| <= 0.005",
                         "|AUC full (sorted) - AUC incomplete| <= 0.005"}
  gap = abs(raw["full_auc"][0] - raw["inc_auc"][0]) / 100
  np.testing.assert_allclose(checks["|AUC full (streamed) - AUC incomplete| <= 0.005"]["value"],
                             gap, rtol=1e-9)
  paths = roc.write_table(tmp_path, 1, rows, payload)
  text = paths["md"].read_text()
  assert "paper Incomplete AUC" in text and "Population AUC of our generator" in text
  assert "## The paper's claims on our numbers" in text and "issue" not in text
  assert "90.370 (0.880)" not in text     # only n = 250
  rows, payload = roc_svm_tables.run_table2(
      sizes=(250,), repetitions=1, n_test=5000, lam_grid=(1e-2,), sigma_grid=(0.5,),
      exact_kernel_max_n=250, num_landmarks=20, population_samples=400000, log=_quiet)
  assert rows[0]["Without Nystrom AUC"] != "-" and rows[0]["Nystrom AUC"] != "-"
  assert payload["checks"][0]["check"].startswith("AUC exact kernel - AUC Nystrom")
  assert 80.0 < payload["raw"][250]["nys_auc"][0] <= 100.0
  assert roc.write_table(tmp_path, 2, rows, payload)["md"].exists()


def _fake_loader(name, data_dir=None):
  del data_dir
  x, y = synthetic.generate(jax.random.key(len(name)), 600, "radial")
  return types.SimpleNamespace(x=np.asarray(x, np.float64), y=np.asarray(y))


@pytest.mark.slow   # reproduction smoke run (Table 3): `make test-slow`
def test_table3_runs_on_a_loader_with_the_dataset_interface(tmp_path):
  rows, payload = roc_svm_tables.run_table3(
      datasets=("skin",), splits=1, skin_subsample=500, test_fraction=0.5, lam_grid=(1e-3,),
      sigma_factors=(1.0,), num_landmarks=20, loader=_fake_loader, log=_quiet)
  assert [r["Kernel"] for r in rows] == ["Linear", "Radial"]
  assert rows[0]["n"] == "500" and rows[0]["n+/n (%)"] == "18.8"   # subsampled, stratified
  raw = payload["raw"]["skin"]
  assert len(raw["radial"]["auc"]) == 1 and raw["radial"]["params"][0]["lam"] == 1e-3
  # The radial model (||x||^2 is the true score) ranks better than a linear one.
  assert raw["radial"]["auc"][0] > raw["linear"]["auc"][0] + 10.0
  assert payload["checks"][0]["check"] == "radial AUC > linear AUC on Skin"
  assert payload["checks"][0]["pass"]
  paths = roc.write_table(tmp_path, 3, rows, payload)
  assert "Skin Segmentation" in paths["md"].read_text()


@pytest.mark.slow
def test_table3_on_the_real_accelerometer_data(shared_data_dir):
  rows, payload = roc_svm_tables.run_table3(
      datasets=("accelerometer",), splits=1, lam_grid=(1e-3,), sigma_factors=(1.0,),
      num_landmarks=20, data_dir=str(shared_data_dir), log=_quiet)
  assert rows[0]["p"] == "6" and rows[0]["n"] == "31,991"
  assert 50.0 < payload["raw"]["accelerometer"]["linear"]["auc"][0] <= 100.0


@pytest.mark.slow   # benchmark smoke run (experiments.bench_roc_svm): `make test-slow`
def test_benchmark_times_every_method_and_projects_the_streamed_one():
  rows, payload = bench_roc_svm.run_benchmark(
      sizes=(250,), full_stream_max_n=200, repeats=1, n_test=5000, log=_quiet)
  by = {r["risk"]: r for r in rows}
  assert by["incomplete"]["measured"] == "fit" and by["full"]["measured"] == "projected"
  assert by["full"]["steps"] == by["full_sorted"]["steps"]
  assert by["full"]["projected_seconds"] == by["full"]["seconds_per_step"] * by["full"]["steps"]
  assert set(payload["ratios"]) == {250}
  np.testing.assert_allclose(payload["ratios"][250]["sorted_over_incomplete"],
                             by["full_sorted"]["seconds"] / by["incomplete"]["seconds"])
  assert payload["materialize_all_pairs"].startswith("allowed")


def test_kernel_benchmark_reports_stages_paper_time_and_refusals(monkeypatch):
  def data():
    x, y = synthetic.generate(jax.random.key(0), 250, "radial")
    return np.asarray(x), np.asarray(y), np.asarray(x), np.asarray(y), 0.5
  cases = [("Table 3 toy linear", 1.0, data, dict(kernel="linear", lam=1e-3)),
           # 2 k-means landmarks: Nystrom features of the linear row's shape [250, 2], so both
           # rows (and both optimizers) train with the same two compiled loops.
           ("Table 3 toy radial", 1.0, data,
            dict(kernel="nystrom", lam=1e-3, num_landmarks=2, landmarks="kmeans")),
           ("(extra) exact kernel n=250", float("nan"), data, dict(kernel="gaussian"))]
  real_check = bench_roc_svm.memory.check_allocation
  def refuse_kernels(num_bytes, what, fix):
    if "Gaussian kernel matrix" in what:
      raise bench_roc_svm.memory.InsufficientMemoryError(f"{what}: refused by the test. {fix}")
    return real_check(num_bytes, what, fix)
  monkeypatch.setattr(bench_roc_svm.memory, "check_allocation", refuse_kernels)
  rows, payload = bench_roc_svm.run_kernel_benchmark(cases=cases, repeats=1, adamax=True,
                                                     log=_quiet)
  assert [(r["row"], r["optimizer"]) for r in rows] == [
      ("Table 3 toy linear", "lbfgs"), ("Table 3 toy linear", "adamax"),
      ("Table 3 toy radial", "lbfgs"), ("Table 3 toy radial", "adamax"),
      ("(extra) exact kernel n=250", "lbfgs")]
  radial = rows[2]
  assert radial["total"] == pytest.approx(radial["landmarks"] + radial["design"]
                                          + radial["train"], rel=1e-6)
  assert radial["landmarks"] > 0 and radial["steps"] < rows[3]["steps"]   # L-BFGS vs Adamax
  assert rows[-1]["refused"].startswith("the exact 250 x 250 Gaussian kernel matrix")
  assert set(payload["radial_over_linear"]) == {"Table 3 toy radial"}


@pytest.mark.slow   # reproduction smoke run (experiments.roc_svm_theorem4): `make test-slow`
def test_theorem4_measures_the_gap_and_plots(tmp_path):
  assert roc_svm_theorem4.landmark_counts(1000) == {"100": 100, "300": 300, "n/log n": 145}
  rows, _ = roc_svm_theorem4.gaps(sizes=(250,), repetitions=1, ds=(20,), log=_quiet)
  assert [r["d_value"] for r in rows] == [20]
  for r in rows:
    assert r["gap"] == pytest.approx(abs(r["U_n(f_hat)"] - r["U_B(f_tilde_B)"]))
    assert 0 < r["U_n(f_hat)"] < 1 and r["N_max"] >= 1 and r["E2"] > 0
  roc_svm_theorem4.plot(rows, tmp_path / "t4.png")
  assert (tmp_path / "t4.png").stat().st_size > 1000


def test_paper_auc_generator_uses_the_matching_share_of_negatives():
  assert roc_svm_tables.negative_fraction("linear", "as_written") == 0.8
  assert roc_svm_tables.negative_fraction("radial", "paper_auc") == 0.5635
  _, y, _, _ = roc_svm_tables._synthetic_split(0, "radial", 8192, 64, 0, "paper_auc")
  assert abs(np.mean(y == 0) - 0.5635) < 0.02
  with pytest.raises(ValueError, match="generator must be one of"):
    roc_svm_tables.negative_fraction("linear", "paper")
