"""Smoke tests: the main job and the engine's experiment scripts run on tiny configurations."""

import json
import os
import subprocess
import sys

import jax
import pytest

from experiments import run
from tests.conftest import REPO_ROOT


def run_module(module, *args, env=None):
  """Runs ``python -m module args`` from the repository root; returns stdout."""
  proc = subprocess.run([sys.executable, "-m", module, *args], cwd=REPO_ROOT, text=True,
                        capture_output=True, env=dict(os.environ, **(env or {})), check=False)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  return proc.stdout


def test_main_job_binary_on_a_mesh_in_process(tmp_path):
  """The binary main job, in this process (the CLI's subprocess path: test_experiments_run's
  test_the_command_line_is_quiet_and_never_replaces_a_finished_run), sharding
  over a mesh of this process's devices (several: the next test). Unknown dataset names are
  refused by run.Settings before any run (test_experiments_run)."""
  lines = []
  run.run(run.Settings(dataset="breast_cancer", trials=1, num_steps=32, num_frequencies=8,
                       num_labeled=60, mesh=True, progress=False, output_dir=str(tmp_path)),
          log=lines.append)
  summary = json.loads((tmp_path / "run.json").read_text())
  assert lines[0].startswith("QSG-S2AUC on breast_cancer")
  assert any("test split" in line for line in lines)
  assert summary["settings"]["mesh_devices"] == jax.device_count()
  assert summary["complete"] and 0.6 < summary["auc_mean"] <= 1.0


@pytest.mark.slow   # reproduction smoke run: `make test-slow`
def test_convergence_script(tmp_path):
  out = run_module("experiments.convergence", "--max_steps=512", "--seeds=2", "--fit_from=64",
                   "--num_unlabeled=60", "--num_labeled=30", f"--output_dir={tmp_path}")
  assert "fitted log-log slope" in out
  payload = json.loads((tmp_path / "convergence.json").read_text())
  assert payload["slope"] < 0 and payload["complete"]  # the error decreases even on this run
  assert (tmp_path / "convergence.png").stat().st_size > 0


def test_convergence_refuses_a_slope_fit_without_two_checkpoints_before_any_run(tmp_path):
  """--max_steps=64 --fit_from=128 failed after the runs, leaving its output folder locked."""
  from experiments import convergence  # pylint: disable=g-import-not-at-top
  from experiments.common import cli  # pylint: disable=g-import-not-at-top
  for flags, fix in ((dict(max_steps=64, fit_from=128), "raise --max_steps to at least 256"),
                     (dict(max_steps=512, fit_from=600), "lower --fit_from to at most 448")):
    with pytest.raises(cli.UserError, match=f"fewer than 2 of the checkpoints.*{fix}"):
      convergence.Settings(output_dir=str(tmp_path / "c"), **flags)
  assert not (tmp_path / "c").exists()
  assert sum(t >= 64 for t in convergence.checkpoints(512, convergence.CHUNK)) >= 2


@pytest.mark.slow   # benchmark / reproduction smoke run: `make test-slow`
def test_engine_benchmark_script(tmp_path):
  out = run_module("experiments.bench_engine", "--dataset=lev", "--binary_dataset=breast_cancer",
                   "--steps=32", "--scaling_steps=32", "--batch=8", "--throughput_steps=64",
                   "--ceiling_points=1024", "--scaling_rounds=1",
                   f"--output_dir={tmp_path}")
  assert "speedup" in out and "fraction_of_ceiling" in out
  payload = json.loads((tmp_path / "bench_engine.json").read_text())
  for row in payload["comparison"]:
    assert row["max_coef_diff"] <= 1e-4 * max(1.0, row["max_coef"])


@pytest.mark.slow   # script smoke run: `make test-slow`
def test_auc_comparison_script_reads_the_shared_flags(tmp_path):
  out = run_module("experiments.auc_comparison", "--datasets=lev", "--trials=1",
                   "--cv_grid=fixed", "--num_labeled=60", "--common_size=100", "--nofull",
                   "--noexact_qsg", "--num_steps=64", "--num_frequencies=8", "--noprogress",
                   f"--output_dir={tmp_path}")
  assert "within 0.01 of the better exact method" in out
  payload = json.loads((tmp_path / "auc_comparison.json").read_text())
  assert payload["settings"]["num_steps"] == 64 and payload["settings"]["trials"] == 1
  assert payload["settings"]["step_size"] == "auto"    # qsg_jax.FitConfig's default
  assert {r["method"] for r in payload["rows"]} == {"QS3ORAO", "M-SAMULT", "M-PNU-AUC", "SVOREX"}
  assert "## Hyper-parameters chosen by cross-validation" in (
      tmp_path / "auc_comparison.md").read_text()


@pytest.mark.slow   # a subprocess of 2 fake devices; --mesh in process: the binary test above
def test_main_job_shards_over_a_mesh_of_every_device(tmp_path):
  run_module("experiments.run", "--mesh", "--trials=1", "--num_steps=64", "--num_frequencies=8",
             "--noprogress", f"--output_dir={tmp_path}",
             env={"XLA_FLAGS": "--xla_force_host_platform_device_count=2"})
  summary = json.loads((tmp_path / "run.json").read_text())
  assert summary["settings"]["mesh_devices"] == 2 == summary["environment"]["device_count"]
  assert summary["complete"] and 0.6 < summary["auc_mean"] <= 1.0


@pytest.mark.slow   # one subprocess per script: `make test-slow`
@pytest.mark.parametrize("module", [
    "run", "auc_comparison", "split_corrections", "unlabeled_value", "timing_vs_unlabeled",
    "select_step", "convergence", "roc_svm_tables", "roc_svm_theorem4", "bench_roc_svm",
    "bench_cv", "bench_engine", "bench_multiprocess", "bench_online_pairwise",
    "online_pairwise_rate"])
def test_every_script_lists_resume_and_overwrite_in_its_help(module):
  proc = subprocess.run([sys.executable, "-m", f"experiments.{module}", "--help"], cwd=REPO_ROOT,
                        text=True, capture_output=True, check=False)
  assert "--[no]resume" in proc.stdout and "--[no]overwrite" in proc.stdout
  assert "--output_dir" in proc.stdout


def test_script_flags_the_data_cannot_serve_are_refused_before_any_run(tmp_path):
  """A sweep of the scripts (2026-11-29): a dataset listed twice counted its trials twice, a
  binary set failed late in split_corrections, --num_labeled beyond the data and --sigma beyond
  float32 ended in tracebacks that left a run blocking the rerun, and sizes that no dataset
  could serve made a 'complete' run with a conclusion."""
  # pylint: disable=g-import-not-at-top
  from experiments import auc_comparison, split_corrections, unlabeled_value
  from experiments import unlabeled_value_report
  from experiments.common import cli, protocols
  out = str(tmp_path / "o")
  with pytest.raises(cli.UserError, match=r"'lev' and 'LEV' name the same dataset"):
    auc_comparison.Settings(datasets=("lev", "LEV"), output_dir=out)
  with pytest.raises(cli.UserError, match=r"--dataset=breast_cancer is a binary dataset"):
    split_corrections.Settings(dataset="breast_cancer", output_dir=out)
  with pytest.raises(ValueError, match=r"--num_labeled on breast_cancer: num_labeled=100000 "
                                       r"leaves no other point"):
    protocols.check_num_labeled(("breast_cancer",), 100000)
  with pytest.raises(cli.UserError, match=r"--sigma=1e\+40 is beyond float32's range"):
    run.solver_of(run.Settings(sigma=1e40, output_dir=out))
  settings = unlabeled_value.Settings(datasets=("breast_cancer",), labeled_sizes=(100000,),
                                      output_dir=out)
  with pytest.raises(cli.UserError, match=r"breast_cancer: no --labeled_sizes value can be "
                                          r"measured \(100000: more than half"):
    unlabeled_value.run_dataset("breast_cancer", settings)
  assert not (tmp_path / "o").exists()
  assert unlabeled_value_report.conclusion_lines("x", []) == ["x: no measurements, so no "
                                                              "conclusion."]
