"""experiments.unlabeled_value: paired differences, the plan of sizes, a smoke run, resuming."""

import dataclasses
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from experiments import unlabeled_value as uv
from experiments import unlabeled_value_report as report
from experiments.common import cli
from experiments.common import reporting
from experiments.common import store as store_lib
from tests.conftest import REPO_ROOT


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
_TINY = dict(eval_size=0, cv_lam=(1e-3,), cv_sigma=(0.5,), cv_folds=2, num_steps=16,
             num_frequencies=4, unlabeled_batch_size=8)


@pytest.mark.slow   # reproduction smoke run: `make test-slow`
def test_smoke_run_writes_files_and_correct_differences(tmp_path):
  gammas = [0.0, 0.5, 1.0]
  settings = dict(labeled_sizes=(20, 400), gammas=tuple(gammas), unlabeled_sizes=(50,),
                  trials=2, **_TINY)
  flags = [f"--{name}=" + (",".join(map(str, value)) if isinstance(value, tuple) else str(value))
           for name, value in settings.items()]
  proc = subprocess.run([sys.executable, "-m", "experiments.unlabeled_value",
                         "--datasets=breast_cancer", f"--output_dir={tmp_path}", "--noprogress",
                         *flags], cwd=REPO_ROOT, text=True, capture_output=True, check=False)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  assert "breast_cancer done" in proc.stdout
  out = tmp_path / "breast_cancer"
  for name in ("unlabeled_value.json", "unlabeled_value.md", "unlabeled_value.csv",
               "unlabeled_value.png", "cells/unlabeled_value/cv_nl_00020.json"):
    assert (out / name).exists(), name
  assert (tmp_path / "unlabeled_value.md").exists()
  assert (tmp_path / "unlabeled_value.json").exists()
  stored = json.loads((out / "unlabeled_value.json").read_text())
  assert stored["complete"] and stored["labeled_sizes"] == [20]
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
  # A finished dataset is kept unless --resume (reuses its cells) or --overwrite.
  python = uv.Settings(datasets=("breast_cancer",), output_dir=str(tmp_path), **settings)
  with pytest.raises(store_lib.StoreError, match="pass --overwrite to replace it, --resume"):
    uv.run(python, log=lambda line: None)
  cells_dir = out / "cells" / "unlabeled_value"
  before = {p.name: p.stat().st_mtime_ns for p in cells_dir.iterdir()}
  again = uv.run(dataclasses.replace(python, resume=True), log=lambda line: None)
  assert {p.name: p.stat().st_mtime_ns for p in cells_dir.iterdir()} == before
  assert again[0]["rows"] == stored["rows"]
  with pytest.raises(store_lib.StoreError, match="num_steps: the stored run has 16, this one 32"):
    uv.run(dataclasses.replace(python, resume=True, num_steps=32), log=lambda line: None)


def test_unlabeled_sizes_are_nested_and_capped():
  assert uv.unlabeled_sizes_of([1000, "all", 50, 10**6], 300) == [50, 300]


def test_gammas_must_include_one_and_sizes_be_numbers_or_all():
  with pytest.raises(cli.UserError, match="must contain 1.0"):
    uv.Settings(gammas=(0.0, 0.5))
  with pytest.raises(cli.UserError, match="unlabeled_sizes entries must be a number or all"):
    uv.Settings(unlabeled_sizes=("every",))


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


def test_redrawing_refuses_a_missing_or_foreign_report(tmp_path):
  """A missing file was a traceback; a file without tables drew nothing and exited 0."""
  redraw = lambda path: subprocess.run(
      [sys.executable, "-m", "experiments.unlabeled_value_report", str(path), str(tmp_path / "o")],
      cwd=REPO_ROOT, text=True, capture_output=True, check=False)
  missing = redraw(tmp_path / "nope.md")
  assert missing.returncode != 0 and "nope.md: no such file" in missing.stderr
  assert "Traceback" not in missing.stderr
  (tmp_path / "other.md").write_text("# A README\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
  foreign = redraw(tmp_path / "other.md")
  assert foreign.returncode != 0 and "holds no unlabeled_value table" in foreign.stderr
  assert not (tmp_path / "o").exists()
