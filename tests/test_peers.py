"""experiments.peers: the protocol of issue 27 on tiny embedded configurations."""

import dataclasses
import inspect
import json
import re
import shlex

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from experiments import peers
from experiments.common import cli
from qsg_jax import folds
from qsg_jax import model_selection

FAST = ("svc", "svr", "logreg", "mord_at")   # scikit-learn / mord peers: a few ms per fit


def _settings(tmp_path, name="run", **overrides):
  values = dict(datasets=("breast_cancer", "lev"), num_labeled=45, num_unlabeled=60,
                test_size=60, trials=2, methods=FAST, output_dir=str(tmp_path / name),
                progress=False)
  return peers.Settings(**dict(values, **overrides))


def _quiet(line):
  del line


def test_smoke_table_fields_grids_and_sizes(tmp_path):
  settings = _settings(tmp_path)
  payload = peers.run(settings, log=_quiet)
  text = (tmp_path / "run" / "results.md").read_text()
  for method in ("SVC (rbf)", "SVR (rbf)", "LogisticRegression", "mord LogisticAT"):
    assert method in text
  for grid in (peers.SVM_GRID, peers.MORD_GRID):
    assert peers.describe_grid(grid) in text      # every grid is stated
  grids = text.split("## Methods and their grids")[1].split("## Not run")[0]
  for method in peers.METHODS:   # sweep Z6 (F2): the grids of the methods that ran, not all 18
    assert (f"| {method.key} |" in grids) == (method.key in FAST), method.key
  assert "Command: `python -m experiments.peers" in text
  binary, ordinal = payload["tables"]["breast_cancer"], payload["tables"]["lev"]
  assert [r["method"] for r in binary] == ["SVC (rbf)", "LogisticRegression"]
  assert len(ordinal) == 3
  for row in binary + ordinal:
    assert 0.5 < row["auc_mean"] <= 1.0 and row["auc_se"] >= 0
    for field in ("AUC", "vs best peer", "wins", "chosen", "CV AUC", "tune s", "fit s",
                  "predict s"):
      assert field in row
  best = max(binary, key=lambda r: r["auc_mean"])
  assert best["vs best peer"] == "(best peer)"
  other = next(r for r in binary if r is not best)
  assert other["wins"].endswith("/2") and other["diff_mean"] <= 0
  skipped = {(row["method"], row["why"].split("(")[1].split(")")[0]) for row in payload["skipped"]}
  assert skipped == {("SVC (rbf)", "lev"), ("SVR (rbf)", "breast_cancer"),
                     ("mord LogisticAT", "breast_cancer")}      # said, not silently dropped
  assert "## Not run" in text and "not a method for ordinal data (lev)" in text
  with pytest.raises(cli.UserError, match="none of them runs on these datasets.*SVC"):
    peers.run(_settings(tmp_path, name="none", datasets=("lev",), methods=("svc",)), log=_quiet)
  assert not (tmp_path / "none").exists()      # refused before the run store starts
  sizes = {d["dataset"]: d for d in payload["datasets"]}
  assert (sizes["breast_cancer"]["labeled"], sizes["breast_cancer"]["unlabeled"],
          sizes["breast_cancer"]["test"]) == (45, 60, 60)
  stored = json.loads((tmp_path / "run" / "results.json").read_text())
  assert stored["complete"] and set(stored["cells"]) == set(payload["cells"])


def test_cv_never_sees_the_test_rows(tmp_path):
  settings = _settings(tmp_path)
  labeled = peers.labeled_dataset("breast_cancer", settings)
  trial = peers.make_trial(labeled, settings, 0)
  rng = np.random.default_rng(0)
  perturbed = trial._replace(x_test=rng.uniform(size=trial.x_test.shape),
                             y_test=rng.permutation(trial.y_test))
  for method in peers.METHODS:
    if method.key in ("svc", "logreg", "lgbm_classifier"):
      a, b = peers.run_cell(method, trial), peers.run_cell(method, perturbed)
      assert a["params"] == b["params"] and a["cv_auc"] == b["cv_auc"], method.key
      assert a["auc"] != b["auc"]


class _Stop(Exception):
  pass


def test_cv_estimators_search_on_the_common_folds(tmp_path, monkeypatch):
  """QSGS2AUCCV cross-validates the labeled points in their order with F folds and fold seed 0:
  ``stratified_folds`` then deals exactly the folds ``peers.common_folds`` gives every peer
  (copies of a row, grouped relative to each column's span, group alike after its scaling)."""
  calls = []
  seed_default = inspect.signature(model_selection.cross_validate).parameters["seed"].default

  def spy(x_labeled, y_labeled, *args, **kwargs):
    calls.append((np.asarray(x_labeled), np.asarray(y_labeled), kwargs.get("num_folds"),
                  kwargs.get("seed", seed_default)))
    raise _Stop

  monkeypatch.setattr(model_selection, "cross_validate", spy)
  settings = _settings(tmp_path)
  trial = peers.make_trial(peers.labeled_dataset("breast_cancer", settings), settings, 0)
  with pytest.raises(_Stop):
    peers._qsg(cv=True)({}, trial.train, 0)
  x, y, num_folds, seed = calls[0]
  assert np.array_equal(y, trial.train.y_labeled)
  np.testing.assert_array_equal(folds.copy_groups(x, y),
                                folds.copy_groups(trial.train.x_labeled, y))
  assert (num_folds, seed) == (trial.train.cv_folds, peers.CV_FOLD_SEED)


def test_resume_gives_the_uninterrupted_rows_and_a_finished_run_is_kept(tmp_path):
  fast = dict(methods=("svc", "svr"))
  first = peers.run(_settings(tmp_path, trials=1, **fast), log=_quiet)
  resumed = peers.run(_settings(tmp_path, trials=2, resume=True, **fast), log=_quiet)
  fresh = peers.run(_settings(tmp_path, "fresh", trials=2, **fast), log=_quiet)
  for name, cell in first["cells"].items():
    assert resumed["cells"][name] == cell                 # stored cells, timings included
  for name, cell in fresh["cells"].items():
    same = ("auc", "params", "cv_auc")
    assert {k: resumed["cells"][name][k] for k in same} == {k: cell[k] for k in same}
  with pytest.raises(cli.UserError, match="finished"):
    peers.run(_settings(tmp_path, trials=2, **fast), log=_quiet)
  peers.run(_settings(tmp_path, trials=1, overwrite=True, **fast), log=_quiet)


def test_csv_binary_and_ordinal_targets(tmp_path):
  pd = pytest.importorskip("pandas")
  rng = np.random.default_rng(0)
  x = rng.normal(size=(400, 3))
  frame = pd.DataFrame(x, columns=["a", "b", "c"])
  frame["colour"] = rng.choice(["red", "blue"], size=400)   # one-hot, as the other target
  frame["grade"] = np.digitize(x[:, 0] + 0.3 * rng.normal(size=400), [-0.5, 0.5]) + 1
  frame["sick"] = np.where(x[:, 1] > 0, "yes", "no")
  path = tmp_path / "mine.csv"
  frame.to_csv(path, index=False)
  ordinal = peers.read_csv(str(path), "grade", 5)
  assert ordinal.task == "ordinal" and ordinal.num_classes == 3 and ordinal.x.shape == (400, 7)
  binary = peers.read_csv(str(path), "sick", 5)
  assert binary.task == "binary" and np.array_equal(binary.y, (x[:, 1] > 0).astype(int))
  settings = peers.Settings(csv=str(path), target="sick", output_dir=str(tmp_path / "n"))
  assert peers.labeled_dataset("csv_mine", settings).note == "binary, positive = 'yes'"
  payload = peers.run(_settings(tmp_path, datasets=(), csv=str(path), target="grade",
                                methods=("svr",)), log=_quiet)
  assert list(payload["tables"]) == ["csv_mine"] and payload["tables"]["csv_mine"][0][
      "auc_mean"] > 0.7
  with pytest.raises(cli.UserError, match="not a column"):
    peers.read_csv(str(path), "nope", 5)
  with pytest.raises(cli.UserError, match=r"--num_classes=4 cuts regression targets only; "
                     r"--target='grade' has 3 values, taken as 3 ordinal classes"):
    peers.read_csv(str(path), "grade", 4)   # was ignored without a word
  frame["sick"] = np.where(np.arange(400) < 3, None, frame["sick"])   # rows without a target
  frame["same"] = 1                                                   # a target of one value
  frame.to_csv(path, index=False)
  with pytest.warns(UserWarning, match=r"3 of 400 rows of .* have no --target='sick' value"):
    assert peers.read_csv(str(path), "sick", 5).x.shape == (397, 7)
  with pytest.raises(cli.UserError, match=r"column 'sick' has 3 missing values"):
    peers.read_csv(str(path), "same", 5)             # a feature now: refused, not all-zero
  frame.drop(columns="sick").to_csv(path, index=False)
  with pytest.raises(cli.UserError, match=r"--target='same' of .* takes 1 value\(s\) \(\[1\]\)"):
    peers.read_csv(str(path), "same", 5)
  frame["rare"] = (np.arange(400) < 2).astype(int)                    # 2 positives of 400
  frame.drop(columns="sick").to_csv(path, index=False)
  with pytest.raises(cli.UserError, match=r"csv_mine, trial 0: the labeled draw has distinct "
                     r"rows per class \[\d+, [01]\] .* the common 3-fold CV needs"):
    peers.make_trial(peers.read_csv(str(path), "rare", 5), peers.Settings(
        csv=str(path), target="rare", output_dir=str(tmp_path / "z")), 0)
  with pytest.raises(cli.UserError, match="go together"):
    peers.Settings(csv=str(path), output_dir=str(tmp_path / "x"))
  with pytest.raises(cli.UserError, match="no such file"):
    peers.Settings(csv=str(tmp_path / "missing.csv"), target="y", output_dir=str(tmp_path / "x"))
  with pytest.raises(cli.UserError, match=r"--datasets: unknown dataset 'sgem'. Did you mean "):
    peers.Settings(datasets=("sgem",), output_dir=str(tmp_path / "y"))
  assert not (tmp_path / "y").exists()   # refused before any run store is started


def test_csv_columns_one_hot_encoding_would_get_wrong_are_refused_naming_them(tmp_path):
  """A sweep of users' files: numbers with thousands separators became 300 indicator columns
  (AUC 0.65 against 0.96 parsed), as did IDs and dates; True / False and empty files crashed."""
  pd = pytest.importorskip("pandas")
  rng = np.random.default_rng(0)
  n = 120
  base = pd.DataFrame({"a": rng.normal(size=n), "sick": rng.choice(["yes", "no"], size=n),
                       "colour": rng.choice(["red", "blue", "green"], size=n)})
  path = tmp_path / "mine.csv"

  def read(**columns):
    frame = base.assign(**columns)
    frame.to_csv(path, index=False)
    return peers.read_csv(str(path), "sick", 5)

  flags = rng.random(n) > 0.5
  ds = read(flag=flags)                                    # True / False: 1 / 0, not a crash
  np.testing.assert_array_equal(ds.x[:, list(ds.feature_names).index("flag")], flags)
  assert ds.x.shape == (n, 5)                              # a, flag, colour one-hot (3)
  coded = read(code=[f"{i % 4 + 1}A" for i in range(n)])   # codes, not numbers with a unit
  assert coded.x.shape == (n, 8)                           # a, colour (3), code one-hot (4)
  cases = {
      "price": ([f"{v:,.2f}" for v in rng.uniform(1000, 9000, n)], "reads as numbers"),
      # sweep Z10: "64%" and "12.5 kg" were one-hot encoded (AUC 0.899 against 0.963 parsed)
      "rate": ([f"{v:.1f}%" for v in rng.uniform(0, 100, n)],
               r"reads as numbers written as text \(e.g. '[\d.]+%': the percent sign '%'\)"),
      "mass": ([f"{v:.1f} kg" for v in rng.uniform(0, 100, n)],
               r"reads .* '[\d.]+ kg': the unit 'kg'"),
      "day": ([f"2024-01-{1 + i % 28:02d}" for i in range(n)], "reads as dates"),
      "id": ([f"user{i}" for i in range(n)], f"has {n} distinct text values in {n} rows"),
      "gap": (np.where(np.arange(n) == 7, None, "x"), "has 1 missing values \\(first on line 9\\)"),
      "big": (np.where(np.arange(n) == 4, np.inf, 1.0), "has 1 infinite values \\(first on line 6\\)"),
  }
  for name, (values, why) in cases.items():
    with pytest.raises(cli.UserError, match=f"column '{name}' {why}"):
      read(**{name: values})
  path.write_text("")
  with pytest.raises(cli.UserError, match="cannot be read as a CSV file"):
    peers.read_csv(str(path), "sick", 5)
  comma_read = read()   # (writes base to path)
  for how in (dict(sep=";"), dict(sep=";", decimal=","), dict(sep="\t"), dict(sep="|")):
    base.to_csv(path, index=False, **how)   # sweep S: refused; read as the comma file now
    other = peers.read_csv(str(path), "sick", 5)
    np.testing.assert_array_equal(other.x, comma_read.x)
    np.testing.assert_array_equal(other.y, comma_read.y)
  path.write_text(base.to_csv(index=False).replace(",", ", "))   # spaces after the commas
  np.testing.assert_array_equal(peers.read_csv(str(path), "sick", 5).x, comma_read.x)
  # Sweep Z10: a .csv.gz (pandas reads it from its name) and a Latin-1 file got the raw
  # UnicodeDecodeError; a -1 marker in the target ran as a third class without a word.
  packed = tmp_path / "mine.csv.gz"
  base.to_csv(packed, index=False)
  np.testing.assert_array_equal(peers.read_csv(str(packed), "sick", 5).x, comma_read.x)
  unnamed = tmp_path / "packed.csv"
  unnamed.write_bytes(packed.read_bytes())
  with pytest.raises(cli.UserError, match=r"packed.csv is gzip-compressed: name it with its "
                                          r"suffix \(.gz"):
    peers.read_csv(str(unnamed), "sick", 5)
  base.assign(colour=np.where(np.arange(n) % 2 == 0, "caf\u00e9", "th\u00e9")).to_csv(
      path, index=False, encoding="latin-1")
  with pytest.raises(cli.UserError, match=r"is not UTF-8 text \(byte 0xe9 at position \d+\); "
                                          "save it as UTF-8 first"):
    peers.read_csv(str(path), "sick", 5)
  marked = base.assign(sick=np.where(np.arange(n) % 3 == 0, -1, np.arange(n) % 2))
  marked.to_csv(path, index=False)
  with pytest.warns(UserWarning, match=r"holds -1 on 40 rows beside two classes, taken as a third "
                                       "ordered class .* leave those cells empty"):
    assert peers.read_csv(str(path), "sick", 5).num_classes == 3
  row = {"dataset": "csv_mine", "task": "binary", "k": 2, "labels": "binary", "labeled": 11,
         "unlabeled": 12, "test": 7, "test set": "rows", "features": 3, "columns": "as read"}
  assert "Caution: csv_mine has 7 test rows" in peers.describe_dataset(row)
  assert "Caution" not in peers.describe_dataset(dict(row, test=peers.MIN_TEST_ROWS))
  # Sweep S: no feature column (pandas' "No objects to concatenate"); a row index pandas saved
  # (used as a feature without a word); a target of another case (the first 20 columns only);
  # stray spaces in text classes (3 values, not shown); a tied regression target (a traceback).
  base[["sick"]].to_csv(path, index=False)
  with pytest.raises(cli.UserError, match="has no column besides --target='sick'"):
    peers.read_csv(str(path), "sick", 5)
  base.to_csv(path)
  with pytest.raises(cli.UserError, match=r"column 'Unnamed: 0' counts the rows .* index=False"):
    peers.read_csv(str(path), "sick", 5)
  base.to_csv(path, index=False)
  with pytest.raises(cli.UserError, match=r"its 3 columns are .*Did you mean --target='sick'\?"):
    peers.read_csv(str(path), "Sick", 5)
  base.assign(sick=np.where(np.arange(n) % 7 == 0, "yes ", base["sick"])).to_csv(path, index=False)
  with pytest.raises(cli.UserError, match=r"3 non-numeric values \['no', 'yes', 'yes '\]"):
    peers.read_csv(str(path), "sick", 5)
  base.assign(sick=np.where(np.arange(n) < 100, 0.0, np.arange(n))).to_csv(path, index=False)
  with pytest.raises(cli.UserError, match=r"--num_classes=5: equal-frequency discretization"):
    peers.labeled_dataset("csv_mine", peers.Settings(csv=str(path), target="sick",
                                                     output_dir=str(tmp_path / "t")))


def test_auc_matches_scikit_learn_per_split():
  rng = np.random.default_rng(1)
  y = rng.integers(0, 4, size=200)
  s = y + rng.normal(size=200)
  assert peers.auc(s, (y > 1).astype(int), 2) == pytest.approx(roc_auc_score(y > 1, s))
  splits = [roc_auc_score(y > j, s) for j in range(3)]
  assert peers.auc(s, y, 4) == pytest.approx(np.mean(splits))


def test_rare_ordinal_classes_merge_into_their_smaller_neighbour(tmp_path):
  y = np.repeat([0, 1, 2, 3], [100, 3, 50, 200])
  labeled = peers.Labeled("toy", "ordinal", np.zeros((y.size, 1)), y, None, None, 4, "as is")
  merged = peers.merge_rare_classes(labeled, 100, 3)
  # class 1 (share 0.85 of 100 labels) joins class 2 (smaller than class 0): 0, 1+2, 3 -> 0, 1, 2
  assert merged.num_classes == 3 and merged.note.endswith("): 0 | 1 to 2 | 3")
  assert np.array_equal(np.unique(merged.y), [0, 1, 2])
  assert np.all(np.diff(merged.y) >= 0)           # order kept
  assert peers.merge_rare_classes(labeled, 2000, 3) is labeled


def test_method_table_keys_grids_and_availability():
  keys = [m.key for m in peers.METHODS]
  assert len(keys) == len(set(keys))
  for m in peers.METHODS:
    assert m.family in ("peer", "ours") and set(m.tasks) <= {"binary", "ordinal"}
    assert m.grid or m.tuning != "common CV"
  assert peers.grid_points({"a": [1, 2], "b": [3]}) == [{"a": 1, "b": 3}, {"a": 2, "b": 3}]
  svc = peers.METHODS[0]     # a changed grid or fixed setting is stored in new cells
  assert dataclasses.replace(svc, grid={"C": [1.0]}).fingerprint() != svc.fingerprint()
  assert dataclasses.replace(svc, fixed={"tol": 1e-4}).fingerprint() != svc.fingerprint()
  assert dataclasses.replace(svc, score="other").fingerprint() == svc.fingerprint()
  libauc = next(m for m in peers.METHODS if m.key == "libauc")
  reason = libauc.why_unavailable()
  assert reason is None or "not importable" in reason


def test_our_cells_go_stale_with_the_library_source_and_the_peers_do_not(monkeypatch):
  ours = next(m for m in peers.METHODS if m.key == "qsg_defaults")
  svc = next(m for m in peers.METHODS if m.key == "svc")
  before = ours.fingerprint(), svc.fingerprint()
  monkeypatch.setattr(peers, "library_digest", lambda: "another source")
  assert ours.fingerprint() != before[0] and svc.fingerprint() == before[1]
  for m in peers.METHODS:   # every variant names a baseline that exists, of its own family
    if m.baseline:
      assert next(b for b in peers.METHODS if b.key == m.baseline).family == m.family


def test_self_training_sees_at_most_its_cap_of_unlabeled_points(monkeypatch):
  from sklearn import semi_supervised
  seen = []

  class Spy(semi_supervised.SelfTrainingClassifier):
    def fit(self, x, y, **kwargs):
      seen.append(int(np.sum(y == -1)))
      return super().fit(x, y, **kwargs)

  monkeypatch.setattr(semi_supervised, "SelfTrainingClassifier", Spy)
  rng = np.random.default_rng(0)
  x_l = rng.uniform(size=(30, 2))
  data = peers.FitData(x_l, (x_l[:, 0] > 0.5).astype(int), rng.uniform(size=(50, 2)), 2)
  method = next(m for m in peers.METHODS if m.key == "self_training_svc")
  params = {**method.fixed, "C": 1.0, "gamma": 1.0}
  for cap, expected in ((20, 20), (100, 50)):
    score = method.fit(dict(params, max_unlabeled=cap), data, 0)
    assert seen[-1] == expected and score(x_l).shape == (30,)
  assert method.fixed["max_unlabeled"] == 2000


def test_variants_are_paired_with_their_baseline_in_the_report(tmp_path, monkeypatch):
  logreg = next(m for m in peers.METHODS if m.key == "logreg")
  variant = dataclasses.replace(logreg, key="svc", label="LogisticRegression(C=100)",
                                family="ours", grid={}, fixed={"C": 100.0, "max_iter": 5000},
                                tuning="defaults", baseline="logreg")   # under a known key
  monkeypatch.setattr(peers, "METHODS", (logreg, variant))
  payload = peers.run(_settings(tmp_path, datasets=("breast_cancer",),
                                methods=("logreg", "svc")), log=_quiet)
  row = next(r for r in payload["tables"]["breast_cancer"] if r["key"] == "svc")
  base = next(r for r in payload["tables"]["breast_cancer"] if r["key"] == "logreg")
  assert row["baseline_diff_mean"] == pytest.approx(row["auc_mean"] - base["auc_mean"])
  text = (tmp_path / "run" / "results.md").read_text()
  assert "## Variants against their baseline" in text and row["vs baseline"] in text


def test_goals_per_dataset_against_the_best_peer_and_lightgbm():
  row = lambda key, method, family, mean: {"key": key, "method": method, "family": family,
                                           "auc_mean": mean}
  tables = {"sgemm": [row("svr", "SVR (rbf)", "peer", 0.90),
                      row("lgbm_regressor", "LightGBM regressor", "peer", 0.93),
                      row("qsg_defaults", "QS3ORAO()", "ours", 0.926)],
            "skin": [row("svc", "SVC (rbf)", "peer", 0.99),
                     row("qsg_defaults", "QSGS2AUC()", "ours", 0.995)]}
  sgemm, skin = peers.goal_rows(tables)
  assert (sgemm["gap"], sgemm["within 0.005"], sgemm["ahead of every peer"]) == (
      "-0.0040", "met", "no")
  assert sgemm["moonshot"].startswith("not met (-0.0040")
  assert (skin["within 0.005"], skin["ahead of every peer"], skin["moonshot"]) == (
      "met", "yes", "-")


def test_a_peer_variant_is_paired_with_its_peer_and_counts_as_a_peer():
  cell = lambda auc: {"auc": auc, "params": {}, "cv_auc": None, "tune_s": 0.0, "fit_s": 0.0,
                      "predict_s": 0.0, "warnings": []}
  table, best = peers.summarize("d", "binary", {"lgbm_classifier": [cell(0.8), cell(0.7)],
                                                "lgbm_stumps": [cell(0.9), cell(0.95)]})
  stumps = next(r for r in table if r["key"] == "lgbm_stumps")
  assert best.key == "lgbm_stumps" and stumps["baseline"] == "lgbm_classifier"
  assert stumps["baseline_diff_mean"] == pytest.approx(0.175)
  assert stumps["AUC"] == "0.9250 +- 0.0250" and stumps["vs baseline"] == "+0.1750 +- 0.0750"
  table, _ = peers.summarize("d", "binary", {"lgbm_classifier": [cell(0.8)],   # one trial: no
                                             "lgbm_stumps": [cell(0.9)]})     # "+- nan"
  stumps = next(r for r in table if r["key"] == "lgbm_stumps")
  assert stumps["AUC"] == "0.9000 (one trial)" and stumps["vs baseline"] == "+0.1000 (one trial)"


def test_ranks_per_dataset_and_their_mean():
  row = lambda label, mean: {"label": label, "auc_mean": mean}
  tables = {"a": [row("x", 0.9), row("y", 0.8), row("z", 0.9)], "b": [row("x", 0.7),
                                                                       row("y", 0.8)]}
  ranks = {r["method"]: r for r in peers.rank_rows(tables)}
  assert (ranks["x"]["a"], ranks["z"]["a"], ranks["y"]["a"]) == (1, 1, 3)   # ties share
  assert ranks["x"]["mean rank"] == 1.5 and ranks["z"]["b"] == "-"
  assert ranks["z"]["mean rank"] == 1.0


def test_bad_flags_name_a_valid_example():
  """A list flag with choices suggests one of them (it suggested --methods=1), and a negative
  --seed is a flag error."""
  from absl import flags   # pylint: disable=g-import-not-at-top,import-outside-toplevel
  for arg, message in [("--methods=foo", r"pass e.g. --methods=svc\."),
                       ("--seed=-1", r"--seed must be an integer >= 0")]:
    fv = flags.FlagValues()
    cli.define_flags(peers.Settings, flag_values=fv)
    with pytest.raises(flags.IllegalFlagValueError, match=message):
      fv(["prog", arg])


def _csv(tmp_path, n=200, seed=0, name="mine.csv", **columns):
  """A small binary CSV (features a, b and ``columns``; target "sick" yes / no); its path."""
  pd = pytest.importorskip("pandas")
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(n, 2))
  frame = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], **columns,
                        "sick": np.where(x[:, 0] + 0.5 * rng.normal(size=n) > 0, "yes", "no")})
  path = tmp_path / name
  frame.to_csv(path, index=False)
  return path


def _csv_settings(tmp_path, path, target="sick", **overrides):
  values = dict(datasets=(), csv=str(path), target=target, methods=("logreg",), trials=1)
  return _settings(tmp_path, **dict(values, **overrides))


def test_a_run_is_tied_to_the_csv_contents_not_only_its_path(tmp_path):
  """Sweep Z6 (F8): after the file's target was shuffled in place, --resume reused the old
  file's cells (trial 0) beside the new file's (trial 1), averaged into one row, rc 0."""
  path = _csv(tmp_path)
  original = path.read_bytes()
  first = peers.run(_csv_settings(tmp_path, path), log=_quiet)
  stored = json.loads((tmp_path / "run" / "results.json").read_text())
  assert len(stored["settings"]["csv_sha256"]) == 64
  _csv(tmp_path, seed=1)                                   # same path, other contents
  for how in (dict(resume=True, trials=2), {}):            # resumed, or rerun plainly
    with pytest.raises(cli.UserError, match=r"--csv='.*mine.csv' is not the file the run in "
                       r".* contents changed .*--overwrite .* new --output_dir"):
      peers.run(_csv_settings(tmp_path, path, **how), log=_quiet)
  path.write_bytes(original)                               # the same contents: resumable
  resumed = peers.run(_csv_settings(tmp_path, path, resume=True, trials=2), log=_quiet)
  for name, cell in first["cells"].items():
    assert resumed["cells"][name] == cell
  _csv(tmp_path, seed=1)
  peers.run(_csv_settings(tmp_path, path, overwrite=True), log=_quiet)   # replaced when asked


@pytest.mark.parametrize("marker", ["?", "-", "missing", "."])
def test_numbers_with_missing_value_markers_are_refused_not_one_hot_encoded(tmp_path, marker):
  """Sweep Z6 (F4): a column of numbers with "?" (UCI's marker) or "-" cells read as text and
  was one-hot encoded into a column per number, its order lost, without a word."""
  n = 120
  values = np.arange(n) % 7 + 1.0
  cells = np.where(np.isin(np.arange(n), [5, 40, 90]), marker, values.astype(str))
  path = _csv(tmp_path, n=n, length=cells)
  with pytest.raises(cli.UserError, match=rf"column 'length' holds numbers but 3 cells are text "
                     rf"\['{re.escape(marker)}'\] \(first on line 7\): missing-value markers\? .*"
                     r"na_values.* or drop the column"):
    peers.read_csv(str(path), "sick", 5)
  words = np.where(values > 3, "high", "low")         # a category, with a number in it
  ds = peers.read_csv(str(_csv(tmp_path, n=n, level=np.where(np.arange(n) == 3, "7", words))),
                      "sick", 5)
  assert ds.x.shape == (n, 5)                         # a, b, level one-hot (3 values)


@pytest.mark.parametrize("ids", ["zero", "one", "start", "gaps"])
def test_a_column_counting_the_rows_is_refused_under_any_name(tmp_path, ids):
  """Sweep Z6 (F5): a row_id 0..n-1 (reset_index().to_csv) in a file sorted by the target gave
  AUC 1.0 for every method; only the name "Unnamed: 0" was refused."""
  n = 120
  column = {"zero": np.arange(n), "one": np.arange(1, n + 1), "start": np.arange(1000, 1000 + n),
            "gaps": np.cumsum(np.random.default_rng(0).integers(1, 9, n))}[ids]
  path = _csv(tmp_path, n=n, row_id=column)
  with pytest.raises(cli.UserError, match=r"column 'row_id' counts the rows: whole numbers "
                     r"increasing .* down the file .* rank by file order.* Drop the column"):
    peers.read_csv(str(path), "sick", 5)
  shuffled = np.random.default_rng(1).permutation(column)     # an ID, not in file order: kept
  assert peers.read_csv(str(_csv(tmp_path, n=n, row_id=shuffled)), "sick", 5).x.shape == (n, 3)


def test_rows_without_a_target_are_said_in_the_report(tmp_path):
  """Sweep Z6 (F3): only a console warning said that rows were left out; results.md and
  results.json showed the smaller counts without a word. The classes of a target read as floats
  (because of the empty cells) are shown as the whole numbers of the file (0, 1, 2)."""
  pd = pytest.importorskip("pandas")
  path = _csv(tmp_path)
  frame = pd.read_csv(path)
  frame["grade"] = np.where(np.isin(np.arange(200), [3, 8]), np.nan, np.arange(200) % 3)
  frame.to_csv(path, index=False)
  lines = []
  payload = peers.run(_csv_settings(tmp_path, path, target="grade", methods=("svr",)),
                      log=lines.append)
  row = payload["datasets"][0]
  assert (row["read"]["rows_without_target"], row["read"]["lines_without_target"]) == (2, [5, 10])
  text = (tmp_path / "run" / "results.md").read_text()
  assert "ordinal, classes [0, 1, 2]; 2 of 200 rows without a target value left out (lines 5, " \
         "10)" in text
  stored = json.loads((tmp_path / "run" / "results.json").read_text())
  assert stored["datasets"][0]["read"]["rows_without_target"] == 2
  assert any("2 of 200 rows without a target value left out" in line for line in lines)


def test_values_beyond_float32_are_refused_before_the_run(tmp_path):
  """Sweep Z6 (F9): a cell of 1e308 gave a library traceback after the run store had started
  (advising qsg_jax.data.minmax_fit, which a CSV user cannot apply), leaving an unfinished run."""
  n = 120
  path = _csv(tmp_path, n=n, big=np.where(np.arange(n) == 6, 1e308, 1.0))
  with pytest.raises(cli.UserError, match=r"column 'big' has 1 values beyond the float32 range "
                     r".*first on line 8: 1e\+308.* Rescale the column in the file"):
    peers.run(_csv_settings(tmp_path, path), log=_quiet)
  assert not (tmp_path / "run").exists()                  # refused before the run store starts


def test_constant_features_only_are_refused_before_the_run(tmp_path):
  """Sweep Z6 (F11): with every feature constant the peers reported AUC 0.5, then ours raised a
  traceback mid-run, leaving an unfinished run."""
  pd = pytest.importorskip("pandas")
  n, path = 120, tmp_path / "mine.csv"
  pd.DataFrame({"a": np.zeros(n), "b": ["x"] * n, "sick": np.arange(n) % 2}).to_csv(
      path, index=False)
  with pytest.raises(cli.UserError, match=r"every feature column is constant \(\['a', 'b'\], "
                     r"one value in all 120 rows\): there is nothing to rank by"):
    peers.run(_csv_settings(tmp_path, path), log=_quiet)
  assert not (tmp_path / "run").exists()


def test_merged_and_cut_classes_are_named_in_the_targets_values(tmp_path):
  """Sweep Z6 (F7, N1): merges were noted in class indices renumbered after each merge ("0+1,
  1+2, 1+2, ..."), so nobody could tell which values ended up together; the cut points of a
  regression target were reported nowhere."""
  pd = pytest.importorskip("pandas")
  rng = np.random.default_rng(0)
  frame = pd.DataFrame({"a": rng.normal(size=20), "b": rng.normal(size=20),
                        "weight": rng.choice(np.arange(130, 260), 20, replace=False)})
  path = tmp_path / "small.csv"
  frame.to_csv(path, index=False)
  settings = peers.Settings(csv=str(path), target="weight", output_dir=str(tmp_path / "s"))
  labeled = peers.labeled_dataset("csv_small", settings)     # 20 whole numbers: 20 classes
  merged = peers.merge_rare_classes(labeled, peers.sizes_of(labeled, settings)["labeled"], 3)
  low, high = np.sort(frame["weight"])[[0, -1]]
  assert merged.num_classes == 2 and merged.note.startswith(
      f"ordinal, classes [{low}, ")
  first, second = merged.note.split("): ")[-1].split(" | ")
  assert "20 classes merged into k = 2 for the 3-fold CV" in merged.note
  assert first.startswith(f"{low} to ") and second.endswith(f" to {high}")
  cut = int(first.split(" to ")[1])                          # the merged classes' boundary
  assert np.array_equal(merged.y, (frame["weight"] > cut).to_numpy(int))
  frame["weight"] = frame["weight"] + 0.5                    # not whole numbers: a regression
  frame.to_csv(path, index=False)
  labeled = peers.labeled_dataset("csv_small", settings)
  cuts = np.quantile(frame["weight"], [0.2, 0.4, 0.6, 0.8])
  assert labeled.read["cut_points"] == pytest.approx(cuts)
  assert f"cut into 5 equal-frequency classes at {cuts[0]:.6g}, " in labeled.note
  row = peers.dataset_row(labeled, settings)
  assert row["read"]["cut_points"] == pytest.approx(cuts) and len(row["classes"]) == 5


def test_the_console_says_how_the_data_was_read_before_the_cells(tmp_path):
  """Sweep Z6 (F10): the console showed AUC lines only; the task, positive class, sizes and
  one-hot columns were in results.md's Datasets table alone."""
  n = 200
  path = _csv(tmp_path, n=n, colour=np.array(["red", "green", "blue"])[np.arange(n) % 3])
  lines = []
  peers.run(_csv_settings(tmp_path, path), log=lines.append)
  first = next(i for i, line in enumerate(lines) if "AUC" in line)
  described = [line for line in lines[:first] if line.startswith("csv_mine (binary, k = 2)")]
  assert described == ["csv_mine (binary, k = 2): binary, positive = 'yes'; 45 labeled, 60 "
                       "unlabeled, 60 test rows (rows held out before the labeled draw); 5 "
                       "features (2 numeric as read; one-hot: 'colour' (3 columns))"]
  text = (tmp_path / "run" / "results.md").read_text()
  assert "| binary, positive = 'yes' | 2 numeric as read; one-hot: 'colour' (3 columns) |" in text


def test_a_draw_that_cannot_be_scored_names_the_fixes_that_help(tmp_path):
  """Sweep Z6 (F6): "Raise --num_labeled, lower --cv_folds" was advised where --num_labeled
  was at its cap (half the non-test rows) and where the test draw had no positive."""
  n = 60
  path = _csv(tmp_path, n=n)
  frame = pytest.importorskip("pandas").read_csv(path)
  frame["rare"] = np.isin(np.arange(n), [10, 50]).astype(int)
  frame.drop(columns="sick").to_csv(path, index=False)
  settings = _csv_settings(tmp_path, path, target="rare", num_labeled=40)
  labeled = peers.labeled_dataset("csv_mine", settings)
  with pytest.raises(cli.UserError, match=r"--num_labeled is capped at half the rows the test "
                     r"draw leaves \(22 here, 40 asked\), so raising it cannot help") as error:
    peers.make_trial(labeled, settings, 0)
  assert "raise --num_labeled" not in str(error.value)
  settings = _csv_settings(tmp_path, path, target="rare", num_labeled=40, cv_folds=2)
  problem = peers._draw_problem(labeled, settings, 22, np.array([20, 2]), np.array([15, 0]),
                                False)
  assert problem.startswith("the test set (15 rows drawn uniformly from the rows, not "
                            "stratified) has rows per class [15, 0], none of class 1")
  assert "--seed" in problem and "--num_labeled" not in problem and "--cv_folds" not in problem


def test_the_command_line_in_the_report_runs_as_copied(tmp_path):
  """Sweep Z6 (F1): `--target=is malignant` was written unquoted, split in two by a shell."""
  path = _csv(tmp_path)
  settings = peers.Settings(csv=str(path), target="is malignant", output_dir=str(tmp_path / "x"))
  words = shlex.split(peers.command_line(settings))
  assert words[:3] == ["python", "-m", "experiments.peers"] and "--target=is malignant" in words


def test_a_run_outside_git_says_so(tmp_path, monkeypatch):
  """Sweep Z6 (F2): outside a git checkout the report said "code at None"."""
  monkeypatch.setattr(peers.reporting, "git_commit", lambda: None)
  peers.run(_settings(tmp_path, datasets=("breast_cancer",), methods=("logreg",), trials=1),
            log=_quiet)
  text = (tmp_path / "run" / "results.md").read_text()
  assert "code at unknown (not a git checkout)" in text and "None" not in text.split("\n")[3]
