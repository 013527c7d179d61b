"""Reduced runs of the reproduction scripts (timing vs n_u, AUC comparison), in process.

Both runs use the embedded LEV set (ordinal, k = 5) with 60 labeled and 100 unlabeled points and
the same tiny QSG settings, so the engine is compiled once for both. The helpers that turn rows
into the tables are tested on hand-made rows with hand-computed answers.
"""

import csv
import dataclasses
import json

from absl import flags as absl_flags
import jax
import numpy as np
import pytest

from experiments import auc_comparison
from experiments import timing_vs_unlabeled as timing
from experiments.common import cli
from experiments.common import methods
from experiments.common import protocols
from qsg_jax import baselines
from qsg_jax import data as data_lib
from qsg_jax import memory

_QSG_TINY = dict(num_steps=64, num_frequencies=8)
_NUM_LABELED, _NUM_UNLABELED = 60, 100
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _assert_outputs(out, stem):
  """The JSON, markdown, CSV and PNG of one script; returns (payload, markdown, csv rows)."""
  payload = json.loads((out / f"{stem}.json").read_text())
  assert payload["environment"]["backend"]
  markdown = (out / f"{stem}.md").read_text()
  with (out / f"{stem}.csv").open() as f:
    table = list(csv.DictReader(f))
  assert (out / f"{stem}.png").read_bytes()[:8] == _PNG_MAGIC
  return payload, markdown, table


@pytest.mark.slow   # reproduction smoke run (experiments.timing_vs_unlabeled): `make test-slow`
def test_timing_script_times_every_method_and_reports_the_ratio(tmp_path):
  lines = []
  payload = timing.run(timing.Settings(
      datasets=("lev",), output_dir=str(tmp_path), sizes=(_NUM_UNLABELED,), full=False,
      exact_cap_ordinal=_NUM_UNLABELED, rerun_below_s=0.0, num_labeled=_NUM_LABELED,
      **_QSG_TINY), log=lines.append)
  written, markdown, table = _assert_outputs(tmp_path, "timing_vs_unlabeled")
  rows = written["rows"]
  assert [r["method"] for r in rows] == ["QS3ORAO", "M-SAMULT", "M-PNU-AUC"]
  for r in rows:
    assert (r["num_labeled"], r["num_unlabeled"], r["status"]) == (60, 100, "ok")
    assert 0 < r["train_time_s"] == r["first_call_s"]      # rerun_below_s=0: no second call
  assert [r["method"] for r in table] == ["QS3ORAO", "M-SAMULT", "M-PNU-AUC"]
  for ratio in written["ratios"]:
    exact = next(r for r in rows if r["method"] == ratio["method"])
    assert ratio["ratio"] == pytest.approx(exact["train_time_s"] / rows[0]["train_time_s"])
  # M-SAMULT was not timed at 20,000: the check says so instead of passing or failing.
  (check,) = written["checks"]
  assert check["method"] == "M-SAMULT" and check["passed"] is None and "not timed" in check["note"]
  assert "(M-)SAMULT / QSG >= 5.0" in markdown and "not measured" in "\n".join(lines)
  assert payload["qsg_hyperparams"]["num_steps"] == 64


def test_speed_ratios_and_checks_on_hand_made_rows(tmp_path):
  def row(dataset, method, n, seconds, status="ok"):
    return {"dataset": dataset, "method": method, "num_labeled": 200, "num_unlabeled": n,
            "status": status, "train_time_s": seconds if status == "ok" else float("nan")}
  rows = [row("a", "QSG-S2AUC", 1000, 2.0), row("a", "SAMULT", 1000, 1.0),
          row("a", "QSG-S2AUC", 20000, 4.0), row("a", "SAMULT", 20000, 40.0),
          row("b", "QS3ORAO", 1000, 3.0), row("b", "M-SAMULT", 1000, 6.0),
          row("b", "QS3ORAO", 20000, 3.0), row("b", "M-SAMULT", 20000, 0, timing.OOM),
          row("c", "QSG-S2AUC", 20000, 10.0), row("c", "SAMULT", 20000, 30.0),
          row("d", "QSG-S2AUC", 1000, 1.0), row("d", "SAMULT", 1000, 2.0),
          row("d", "QSG-S2AUC", 5000, 9.0), row("d", "SAMULT", 5000, 8.0),
          row("d", "QSG-S2AUC", 20000, 9.0), row("d", "SAMULT", 20000, 90.0),
          row("d", "SAMULT", 50000, 0, timing.CAPPED), row("d", "SAMULT", 90000, 0, timing.OOM)]
  ratios = timing.speed_ratios(rows)
  assert [(r["dataset"], r["num_unlabeled"], r["ratio"], r["qsg_faster_from"]) for r in ratios] == [
      ("a", 20000, 10.0, 20000), ("b", 1000, 2.0, 1000), ("c", 20000, 3.0, 20000),
      ("d", 20000, 10.0, 20000)]     # d: faster at 1000, slower at 5000, faster from 20000 on
  checks = timing.ratio_checks(ratios)
  assert [(c["dataset"], c["passed"]) for c in checks] == [("a", True), ("b", None),
                                                           ("c", False), ("d", True)]
  # The plot ends b's M-SAMULT line with an out-of-memory marker, d's with a cap and an OOM one.
  timing.plot(rows, tmp_path / "hand.png")
  assert (tmp_path / "hand.png").read_bytes()[:8] == _PNG_MAGIC


def test_exact_methods_above_the_cap_are_marked_out_of_memory_or_capped(monkeypatch):
  monkeypatch.setattr(memory, "available_bytes", lambda device=None: 10**6)
  # 4 n^2 float32 numbers: n = 200 needs 640,000 bytes (fits in 80% of 1e6), n = 300 does not.
  assert timing.exact_status_above_cap("SAMULT", 100, 100, 0.8) == (timing.CAPPED, "")
  status, message = timing.exact_status_above_cap("SAMULT", 100, 200, 0.8)
  assert status == timing.OOM and "n = 300" in message and "GiB" in message


@pytest.mark.slow   # reproduction smoke run (experiments.auc_comparison): `make test-slow`
def test_auc_comparison_runs_every_method_on_identical_splits(tmp_path):
  lines = []
  payload = auc_comparison.run(auc_comparison.Settings(
      datasets=("lev", "dota2"), output_dir=str(tmp_path), trials=2, num_labeled=_NUM_LABELED,
      common_size=_NUM_UNLABELED, full=False, cv_grid="fixed", progress=False,
      data_dir=str(tmp_path / "no_data"), **_QSG_TINY), log=lines.append)
  written, markdown, table = _assert_outputs(tmp_path, "auc_comparison")
  # dota2's files are missing: skipped and said so, not dropped silently.
  assert [s["dataset"] for s in written["skipped"]] == ["dota2"]
  assert "Skipped" in markdown and any("dota2: SKIPPED" in line for line in lines)
  assert sum("--cv_grid=fixed: set, not cross-validated" in line for line in lines) == 4
  assert not any("nan" in line for line in lines)   # it said "CV AUC nan"
  assert [r["method"] for r in table] == ["QS3ORAO", "QS3ORAO-exact", "M-SAMULT", "M-PNU-AUC",
                                          "SVOREX"]
  rows = payload["rows"]
  assert len(rows) == 2 * 5 and all(r["status"] == "ok" for r in rows)
  assert all(0.5 < r["auc"] <= 1.0 for r in rows)
  # Every method is scored on the same points: the same splits have both sides (LEV's rarest
  # class may miss a trial's 100 common points; trial 1 has it among the labeled ones only).
  assert [len({r["splits_scored"] for r in rows if r["trial"] == t}) for t in (0, 1)] == [1, 1]
  assert {r["splits_scored"] for r in rows} <= {3, 4}
  mean = lambda m: np.mean([r["auc"] for r in rows if r["method"] == m])
  (close,) = written["closeness"]
  better = max(("M-SAMULT", "M-PNU-AUC"), key=mean)
  assert close["better_exact"] == better
  assert close["difference"] == pytest.approx(mean("QS3ORAO") - mean(better))
  assert close["within_0.01"] == (close["difference"] >= -0.01)
  assert close["qsg_minus_its_exact"] == pytest.approx(mean("QS3ORAO") - mean("QS3ORAO-exact"))
  assert close["its_exact_minus_better_exact"] == pytest.approx(mean("QS3ORAO-exact") -
                                                                mean(better))
  (sup,) = written["supervised"]
  assert sup["setting"] == "common"
  assert sup["mean_difference"] == pytest.approx(mean("QS3ORAO") - mean("SVOREX"))
  # The literal protocol: trial 1's SVOREX score from its own split and common subset, both from
  # fold_in(key(seed = 0), 1) (streams 0 and 3).
  dataset = data_lib.load("lev")
  proto = protocols.protocol_for(dataset, _NUM_LABELED)
  key = jax.random.fold_in(jax.random.key(0), 1)
  trial = protocols.make_trial(dataset, proto, key)
  order_bits = jax.random.key_data(jax.random.fold_in(key, 3))
  common = np.random.default_rng(np.asarray(order_bits)).permutation(
      trial.x_unlabeled.shape[0])[:100]
  model = baselines.fit_svorex(trial.x_labeled, trial.y_labeled,
                               **methods.FIXED["svorex"], num_classes=5)
  # Splits with an empty side among the points have no AUC (NaN) and are left out of the mean.
  expected = np.nanmean(baselines.split_aucs(baselines.decision_function(
      model, trial.x_unlabeled[common]), trial.y_eval[common], 5))
  (svorex,) = [r for r in rows if r["method"] == "SVOREX" and r["trial"] == 1]
  assert svorex["auc"] == pytest.approx(expected, abs=1e-6)
  assert svorex["num_eval"] == 100 and svorex["num_unlabeled"] == 0
  # QS3ORAO-exact: QS3ORAO's objective solved exactly with QS3ORAO's hyper-parameters.
  own = baselines.fit_exact_qsg(trial.x_labeled, trial.y_labeled, trial.x_unlabeled[common],
                                num_classes=5, **methods.FIXED["qsg"])
  expected = np.nanmean(baselines.split_aucs(baselines.decision_function(
      own, trial.x_unlabeled[common]), trial.y_eval[common], 5))
  (exact,) = [r for r in rows if r["method"] == "QS3ORAO-exact" and r["trial"] == 1]
  assert exact["auc"] == pytest.approx(expected, abs=1e-6)


def test_closeness_check_fails_when_a_qsg_trial_diverged():
  def summary(qsg_ok):
    return [dict(dataset="skin", method="QSG-S2AUC", setting="common", auc_mean=0.99,
                 trials_ok=qsg_ok),
            dict(dataset="skin", method="SAMULT", setting="common", auc_mean=0.99,
                 trials_ok="10/10")]
  (complete,) = methods.closeness_checks(summary("10/10"))
  assert complete["within_0.01"] and complete["qsg_all_trials_ok"]
  # Same mean over the trials that ran, but 4 of 10 diverged: the check must not pass.
  (partial,) = methods.closeness_checks(summary("6/10"))
  assert not partial["within_0.01"] and partial["qsg_trials_ok"] == "6/10"


def test_scored_auc_leaves_out_splits_with_an_empty_side():
  # k = 4 but no point of class 3: split 2 ({y > 2}) has no positives. Split 0: positives
  # (0.4, 0.3, 0.9) vs negative 0.5 -> 1/3; split 1: 0.9 vs (0.5, 0.4, 0.3) -> 1.
  scores, labels = np.array([0.5, 0.4, 0.3, 0.9]), np.array([0, 1, 1, 2])
  auc, scored = methods.scored_auc(scores, labels, 4)
  assert scored == 2 and auc == pytest.approx((1 / 3 + 1) / 2)
  assert methods.scored_auc(scores, labels, 3) == (pytest.approx(2 / 3), 2)
  assert np.isnan(methods.scored_auc(scores, np.zeros(4, int), 3)[0])


def test_comparison_trial_seeds_offset_is_seed_plus_t_and_fold_in_shares_no_trial():
  offset = protocols.comparison_trial_seeds(5, 2, "offset")
  assert offset.split == offset.fit_key == offset.seed == 7
  np.testing.assert_array_equal(offset.subset_rng.permutation(50),
                                np.random.default_rng([7, 2]).permutation(50))
  # seed + t: (seed 0, trial 1) and (seed 1, trial 0) are the same trial; fold_in: not.
  assert protocols.comparison_trial_seeds(0, 1, "offset").split == 1
  dataset = data_lib.load("lev")
  proto = protocols.protocol_for(dataset, _NUM_LABELED)
  a, b = (protocols.comparison_trial_seeds(s, t) for s, t in ((0, 1), (1, 0)))
  labeled_a = protocols.make_trial(dataset, proto, a.split).x_labeled
  labeled_b = protocols.make_trial(dataset, proto, b.split).x_labeled
  assert not np.array_equal(labeled_a, labeled_b)
  assert not np.array_equal(a.subset_rng.permutation(50), b.subset_rng.permutation(50))
  assert not np.array_equal(jax.random.key_data(a.fit_key), jax.random.key_data(b.fit_key))
  with pytest.raises(ValueError, match="trial_seeds must be one of"):
    protocols.comparison_trial_seeds(0, 0, "seed+t")


def test_auc_comparison_refuses_bad_settings(tmp_path):
  with pytest.raises(TypeError, match="trails"):
    auc_comparison.Settings(trails=3)   # pylint: disable=unexpected-keyword-arg
  with pytest.raises(cli.UserError, match="cv_grid must be one of quick, paper, fixed"):
    auc_comparison.Settings(cv_grid="full")
  with pytest.raises(cli.UserError, match="trial_seeds must be one of fold_in, offset"):
    auc_comparison.Settings(trial_seeds="plus")
  with pytest.raises(cli.UserError, match="no dataset of"):
    auc_comparison.run(auc_comparison.Settings(
        datasets=("dota2",), output_dir=str(tmp_path), data_dir=str(tmp_path / "no_data"),
        progress=False), log=lambda _: None)


@pytest.mark.parametrize("arg, message", [
    ("--datasets=", "--datasets must not be empty"),
    ("--cv_lam=abc", "--cv_lam must be a comma-separated list of numbers"),
    ("--cv_step_size=fast", "--cv_step_size must be a comma-separated list of numbers or auto"),
    ("--cv_gamma=0.5,2", r"--cv_gamma entries must be a number >= 0 and <= 1"),
])
def test_comparison_flags_refuse_bad_lists_before_loading_data(arg, message):
  fv = absl_flags.FlagValues()
  cli.define_flags(auc_comparison.Settings, flag_values=fv)
  with pytest.raises(absl_flags.IllegalFlagValueError, match=message):
    fv(["prog", arg, "--output_dir=/nonexistent/never_written"])


def test_rare_classes_merge_into_the_smaller_neighbour_and_pnu_grid_mirrors_gamma():
  # Class 0 (1 point) joins class 1; then class 3 (2 points) joins class 2 (its only neighbour).
  labels = np.array([0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3])
  np.testing.assert_array_equal(methods.merge_rare_classes(labels, 3),
                                [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1])
  np.testing.assert_array_equal(methods.merge_rare_classes(labels, 1), labels)
  settings = auc_comparison.Settings()
  grid = methods.grid_for("M-PNU-AUC", settings)
  np.testing.assert_allclose(grid["gamma"], [-1.0, -0.5, 0.0, 0.5, 1.0])
  assert set(methods.grid_for("SVOREX", settings)) == {"c", "sigma"}
  assert set(methods.grid_for("QS3ORAO", settings)) == {"lam", "sigma", "gamma", "step_size"}
  # step_size is fixed at --step_size unless --cv_step_size lists values.
  assert methods.grid_for("QSG-S2AUC", settings)["step_size"] == ["auto"]   # the default
  fixed = dataclasses.replace(settings, step_size=3.0)
  np.testing.assert_allclose(methods.grid_for("QSG-S2AUC", fixed)["step_size"], [3.0])
  searched = dataclasses.replace(settings, cv_step_size=(1.0, "auto"))
  assert methods.grid_for("QSG-S2AUC", searched)["step_size"] == [1.0, "auto"]
  searched = dataclasses.replace(settings, cv_step_size=(1.0, 3.0))
  paper = methods.grid_for("QS3ORAO", dataclasses.replace(searched, cv_grid="paper"))
  np.testing.assert_allclose(paper["step_size"], [1.0, 3.0])
  assert paper["lam"].size == 7 and paper["gamma"].size == 11


@pytest.mark.slow   # benchmark / reproduction smoke run: `make test-slow`
def test_paper_grid_path_chooses_gamma_per_subproblem_and_uses_the_spectral_cv(tmp_path,
                                                                                 monkeypatch):
  """--cv_grid=paper on a shrunken paper grid: QS3ORAO gets a [k-1] gamma (the ordinal paper's
  per-subproblem search) and the baselines' CV runs the spectral solver."""
  small = lambda key: ({"c": np.array([1.0]), "sigma": np.array([1.0])} if key == "svorex" else
                       {"lam": np.array([0.125]), "sigma": np.array([1.0]),
                        "gamma": np.array([-0.5, 0.0, 0.5] if "pnu" in key else [0.0, 0.5, 1.0])})
  monkeypatch.setattr(baselines, "paper_grid", small)
  monkeypatch.setattr(methods.model_selection, "paper_grid", lambda: {
      "lam": np.array([0.125]), "sigma": np.array([1.0]), "gamma": np.array([0.0, 0.5, 1.0])})
  payload = auc_comparison.run(auc_comparison.Settings(
      datasets=("swd",), output_dir=str(tmp_path), trials=1, num_labeled=150,
      common_size=_NUM_UNLABELED, full=False, cv_grid="paper", cv_folds=3, cv_unlabeled=50,
      progress=False, **_QSG_TINY), log=lambda _: None)
  records = {r["method"]: r for r in payload["cv"]}
  assert not records["QS3ORAO"]["merged_classes"]   # SWD: k = 4, every class >= 3 labels
  assert len(records["QS3ORAO"]["best"]["gamma"]) == 3
  assert records["M-SAMULT"]["solver"] == "spectral" and records["QS3ORAO"]["cv"] == "paper"
  assert all(r["status"] == "ok" for r in payload["rows"])
  (exact,) = [r for r in payload["rows"] if r["method"] == "QS3ORAO-exact"]
  assert 0.5 < exact["auc"] <= 1.0


@pytest.mark.slow
def test_auc_comparison_with_cross_validation_binary_and_ordinal(tmp_path):
  """The quick-CV path of every method, with QSG also on the whole unlabeled set."""
  payload = auc_comparison.run(auc_comparison.Settings(
      datasets=("breast_cancer", "esl"), output_dir=str(tmp_path), trials=2, num_labeled=100,
      common_size=150, eval_size=200, cv_unlabeled=80, cv_folds=3, cv_lam=(0.125,),
      cv_sigma=(0.5, 1.0), cv_gamma=(0.5,), cv_c=(1.0,), progress=False, **_QSG_TINY),
      log=lambda _: None)
  assert {r["cv"] for r in payload["cv"]} == {"quick"}
  assert {(r["dataset"], r["method"]) for r in payload["cv"]} == {
      ("breast_cancer", m) for m in methods.BINARY_METHODS} | {
          ("esl", m) for m in methods.ORDINAL_METHODS}
  esl_cv = [r for r in payload["cv"] if r["dataset"] == "esl"]
  assert all(r["merged_classes"] for r in esl_cv)   # ESL has classes with under 3 labels
  settings = {(s["dataset"], s["method"], s["setting"]) for s in payload["summary"]}
  assert ("breast_cancer", "QSG-S2AUC", "full") in settings
  assert ("esl", "QS3ORAO", "full") in settings
  assert all(r["status"] == "ok" for r in payload["rows"])
