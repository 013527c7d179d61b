"""The main job and the command line every script shares (experiments/common).

Flags generated from a settings dataclass, a results directory that is never overwritten without
--overwrite, kill-and-resume to the uninterrupted numbers, short user errors, quiet output, the
run's metadata and saved models, the plots and the ETA measured after compilation.
"""

import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import types

from absl import flags
import jax
import numpy as np
import pytest

import qsg_jax
from experiments import plot as plot_lib
from experiments import run
from experiments.common import cli
from experiments.common import protocols
from experiments.common import reporting
from experiments.common import store as store_lib
from qsg_jax import data as data_lib
from tests.conftest import REPO_ROOT

# Steady-state trials take ~0.5 s, so a kill right after the first trial file lands mid-run.
_TINY = dict(num_steps=1024, num_frequencies=8)
_FAST = ["--num_steps=64", "--num_frequencies=8", "--noprogress"]
_TRIALS = 3


def _script(*args, env=None):
  """``python -m experiments.run args`` from the repository root (a CompletedProcess)."""
  return subprocess.run([sys.executable, "-m", "experiments.run", *args], cwd=REPO_ROOT,
                        text=True, capture_output=True, check=False,
                        env=None if env is None else dict(os.environ, **env))


def _flag_values():
  fv = flags.FlagValues()
  cli.define_flags(run.Settings, flag_values=fv)
  return fv


@pytest.mark.parametrize("arg, message", [
    ("--trials=0", r"flag --trials=0: --trials must be an integer >= 1; pass e.g. --trials=10"),
    ("--eval_size=-1", r"--eval_size must be an integer >= 0"),
    ("--num_steps=0", r"--num_steps must be an integer >= 1"),
    ("--labeled_batch_size=0", r"--labeled_batch_size must be an integer >= 1"),
    ("--gamma=1.5", r"--gamma must be a number >= 0 and <= 1"),
    ("--sigma=0", r"--sigma must be a number > 0"),
    ("--lam=-1", r"--lam must be a number >= 0"),
    ("--step_size=-3", r"--step_size must be a number > 0"),
    ("--step_size=fast", r"--step_size must be a number or auto"),
    ("--output_dir=", r"--output_dir must not be empty"),
    ("--cv=full", r"value should be one of <paper\|quick\|none>"),
    ("--solver=newton", r"value should be one of <dsg\|direct\|auto>"),
    ("--seed=-1", r"--seed must be an integer >= 0"),   # was a traceback from the key check
])
def test_flags_are_checked_at_parsing_with_the_flag_value_and_range(arg, message):
  with pytest.raises(flags.IllegalFlagValueError, match=message):
    _flag_values()(["prog", arg])


def test_settings_from_flags_default_to_the_library_and_python_settings_are_checked():
  fv = _flag_values()
  fv(["prog", "--step_size=0.5", "--trials=3"])
  settings = cli.settings_from_flags(run.Settings, flag_values=fv)
  assert settings == run.Settings(step_size=0.5, trials=3)
  defaults = qsg_jax.FitConfig()
  assert cli.engine_params(run.Settings()) == {
      name: getattr(defaults, name) for name in cli.ENGINE_PARAMS}
  text = fv.get_help()
  for name in ("sigma", "lam", "gamma", "step_size", "num_steps", "resume", "overwrite"):
    assert f"--{name}" in text or f"--[no]{name}" in text, name
  with pytest.raises(cli.UserError, match=r"trials must be an integer >= 1; received 0"):
    run.Settings(trials=0)
  with pytest.raises(cli.UserError, match="--resume and --overwrite contradict"):
    run.Settings(resume=True, overwrite=True)
  with pytest.raises(TypeError, match="trails"):
    run.Settings(trails=3)   # pylint: disable=unexpected-keyword-arg
  # Dataset names are checked in every script's settings, before any run store exists.
  with pytest.raises(cli.UserError, match=r"--dataset: unknown dataset 'nope'.* Available "):
    run.Settings(dataset="nope")
  from experiments import auc_comparison  # pylint: disable=g-import-not-at-top
  with pytest.raises(cli.UserError, match=r"--datasets: unknown dataset 'sgemmm'"):
    auc_comparison.Settings(datasets=("lev", "sgemmm"))
  assert run.Settings(dataset="LEV").dataset == "LEV"      # the loader's spelling rules


@pytest.mark.parametrize("changes, message", [
    (dict(num_classes=3), r"lev has 5 ordered classes of its own; num_classes=3 only cuts"),
    (dict(num_labeled=5000), r"num_labeled=5000 leaves no other point: lev has 1000 points"),
])
def test_sizes_and_classes_the_dataset_cannot_give_are_refused_before_any_run(tmp_path, changes,
                                                                              message):
  settings = run.Settings(output_dir=str(tmp_path / "out"), trials=1, progress=False, **changes)
  with pytest.raises(cli.UserError, match=message):
    run.run(settings, log=lambda _: None)
  assert not (tmp_path / "out").exists()     # no unfinished stub run left behind


def test_a_data_dir_that_is_not_a_directory_is_refused_not_ignored(tmp_path):
  for path in (tmp_path / "typo", tmp_path / "a_file"):
    if path.name == "a_file":
      path.write_text("x")
    with pytest.raises(data_lib.DataNotFoundError, match=r"data_dir=.* is not a directory"):
      data_lib.load("cod_rna", data_dir=str(path))


def test_help_lists_resume_overwrite_and_the_solver():
  """The help text of the script's flags (the ones ``cli.script`` defines; the CLI itself runs
  in test_the_command_line_is_quiet_and_never_replaces_a_finished_run)."""
  text = _flag_values().get_help()
  assert "--[no]resume: Continue the run in --output_dir" in text
  assert "--[no]overwrite: Replace the run in --output_dir" in text
  assert "--solver: <dsg|direct|auto>: How each trial (and --cv) trains: dsg = the" in text


def test_empty_output_dir_and_a_missing_data_file_are_short_errors(tmp_path, monkeypatch):
  """In process: the errors are ones the CLI prints as "error: ..." with exit status 2
  (``cli.SHORT_ERRORS``; that path runs as a subprocess in
  test_the_command_line_is_quiet_and_never_replaces_a_finished_run), and "--output_dir=" is
  refused at parsing (test_flags_are_checked_at_parsing_with_the_flag_value_and_range)."""
  with pytest.raises(store_lib.StoreError, match="--output_dir is empty"):
    store_lib.RunStore("", "run").start({})
  monkeypatch.setenv("QSG_JAX_DATA", str(tmp_path / "none"))
  monkeypatch.setenv("QSG_JAX_DOWNLOAD", "0")
  settings = run.Settings(dataset="sgemm", output_dir=str(tmp_path / "out"), progress=False)
  with pytest.raises(cli.SHORT_ERRORS) as info:
    run.run(settings, log=lambda _: None)
  assert isinstance(info.value, data_lib.DataNotFoundError)
  assert str(info.value).startswith("dataset 'sgemm' needs file(s) that were not found")
  assert len(str(info.value).splitlines()) <= 20
  assert not (tmp_path / "out").exists()        # nothing written for a run that cannot start


def test_multi_process_flags_need_all_three_or_none():
  with pytest.raises(ValueError, match="needs all of coordinator_address.*received "
                                       "coordinator_address='host:1234', num_processes=None"):
    run.initialize_distributed(coordinator_address="host:1234", num_processes=None,
                               process_id=None, auto=False)
  assert not run.initialize_distributed(coordinator_address=None, num_processes=None,
                                        process_id=None, auto=False)


def test_atomic_write_keeps_the_old_file_on_failure_and_leaves_no_temporary(tmp_path):
  path = tmp_path / "r.json"
  reporting.atomic_write_json(path, {"a": np.float32(1.5), "b": float("nan")})
  assert json.loads(path.read_text()) == {"a": 1.5, "b": None}
  with pytest.raises(RuntimeError, match="boom"):
    with reporting.atomic_open(path) as f:
      f.write("half a fil")
      raise RuntimeError("boom")
  assert json.loads(path.read_text())["a"] == 1.5
  assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
  (tmp_path / (reporting.TEMP_PREFIX + "r.json.x")).write_text("left by a kill")
  assert reporting.remove_stale_temporaries(tmp_path) == [reporting.TEMP_PREFIX + "r.json.x"]


def test_unwritable_output_dir_is_refused_before_training(tmp_path):
  (tmp_path / "file").write_text("")
  with pytest.raises(PermissionError, match=r"--output_dir=.*file/out is not writable"):
    store_lib.check_output_dir(tmp_path / "file" / "out")
  with pytest.raises(PermissionError, match="is not writable"):
    run.run(run.Settings(output_dir=str(tmp_path / "file" / "out"), trials=1, num_steps=8),
            log=lambda _: None)


def test_run_store_never_replaces_a_run_without_being_asked(tmp_path):
  settings = {"seed": 0, "lam": 1e-3, "trials": 2}
  with pytest.raises(store_lib.StoreError, match="holds no run to resume"):
    store_lib.RunStore(tmp_path / "empty", "run").start(settings, resume=True)
  store = store_lib.RunStore(tmp_path / "a", "run")
  assert store.start(settings) == {}
  # Sweep Z1: a run refused before its first unit (no data) left a manifest that refused the
  # same command once the data were there; with nothing done there is nothing to lose.
  assert store_lib.RunStore(tmp_path / "a", "run").start(settings) == {}
  store.cached("trial_0", lambda: {"auc": 0.9})
  with pytest.raises(store_lib.StoreError, match=r"unfinished run \(run.json, 1 units done\); "
                                                 "pass --resume"):
    store_lib.RunStore(tmp_path / "a", "run").start(settings)
  other = dict(settings, seed=1, lam=1e-2)
  with pytest.raises(store_lib.StoreError, match=r"(?s)lam: the stored run has 0.001.*seed: "):
    store_lib.RunStore(tmp_path / "a", "run").start(other, resume=True)
  resumed = store_lib.RunStore(tmp_path / "a", "run")
  # A selection setting (more trials) may differ on --resume; the finished cell is reused.
  assert resumed.start(dict(settings, trials=5), resume=True, selection=("trials",)) == {
      "trial_0": {"auc": 0.9}}
  resumed.finish({"auc_mean": 0.9})
  with pytest.raises(store_lib.StoreError, match="holds the finished results run.json; pass "
                                                 "--overwrite to replace it"):
    store_lib.RunStore(tmp_path / "a", "run").start(settings)
  assert store_lib.RunStore(tmp_path / "a", "run").start(settings, overwrite=True) == {}
  assert not list((tmp_path / "a" / "cells" / "run").iterdir())
  # A script of another name shares the directory without touching this run.
  store_lib.RunStore(tmp_path / "a", "other").start({})
  assert json.loads((tmp_path / "a" / "run.json").read_text())["complete"] is False


def test_cell_store_returns_the_same_values_fresh_and_resumed(tmp_path):
  store = store_lib.RunStore(tmp_path, "x")
  store.start({"a": 1})
  fresh = store.cached("x/1", lambda: {"v": float("nan"), "w": [1, 2.5], "n": None})
  assert store.cached("x/1", lambda: pytest.fail("computed twice")) is fresh
  resumed = store_lib.RunStore(tmp_path, "x")
  assert list(resumed.start({"a": 1}, resume=True)) == ["x_1"]
  again = resumed.cached("x/1", lambda: pytest.fail("computed on resume"))
  assert json.dumps(again) == json.dumps(fresh)            # NaN kept, not turned into null


def test_trials_of_different_seeds_share_no_split_and_streams_are_named():
  dataset = data_lib.load("lev")
  proto = protocols.protocol_for(dataset)
  labeled = lambda seed, t: protocols.make_trial(
      dataset, proto, protocols.trial_key(seed, t), eval_size=0).x_labeled
  assert not np.array_equal(labeled(0, 1), labeled(1, 0))   # seed + t would make them equal
  np.testing.assert_array_equal(labeled(0, 1), labeled(0, 1))
  key = protocols.trial_key(0, 0)
  np.testing.assert_array_equal(
      jax.random.key_data(protocols.stream_key(key, "training")),
      jax.random.key_data(jax.random.fold_in(key, protocols.STREAMS["training"])))
  with pytest.raises(KeyError):
    protocols.stream_key(key, "trainnig")


def test_progress_eta_counts_only_the_work_after_the_first_update(monkeypatch):
  bar = reporting.Progress(100, enabled=True, log=lambda _: None)
  opened = []
  monkeypatch.setattr(bar, "_open", lambda initial, note=None: opened.append(initial) or
                      types.SimpleNamespace(n=initial, close=lambda: None,
                                            update=lambda d: None))
  time.sleep(0.05)        # "compilation": before the first update
  bar.update(10)
  bar.update(20)
  bar.close()
  assert opened == [10]   # the clock (tqdm's initial) starts at the first update's units


def test_tiny_evaluation_sets_are_refused_before_training(tmp_path):
  with pytest.raises(cli.UserError, match=r"trial 1: the 3 evaluation points .* have no point "
                                          r"on one side and no AUC .* Score on more points"):
    run.run(run.Settings(output_dir=str(tmp_path / "out"), trials=1, eval_size=3,
                         num_steps=8), log=lambda _: None)
  assert not (tmp_path / "out").exists()


def test_a_class_of_two_rows_keeps_one_for_the_evaluation(tmp_path):
  """esl's class 0 has 2 rows: on 6 of its 10 default trials both were drawn as labeled, which
  left the ordinal paper's evaluation points (the unlabeled ones) without it and the run
  refused. The split now keeps every class among the unlabeled too, and trials whose first draw
  did so are the same draw as before (every other registered dataset's)."""
  esl = data_lib.load("esl")
  paper = protocols.protocol_for(esl)   # the reproductions' draws (recorded runs) stay as they were
  proto = dataclasses.replace(paper, cover_evaluation=True)
  for t in range(10):
    trial = protocols.make_trial(esl, proto, protocols.trial_key(0, t))
    assert np.all(np.bincount(trial.y_eval, minlength=proto.num_classes) > 0), t
    run.check_evaluation_set(trial, proto.num_classes, t)
  assert not np.all(np.bincount(protocols.make_trial(esl, paper, protocols.trial_key(0, 1)).y_eval,
                                minlength=paper.num_classes) > 0)
  lines = []
  run.run(run.Settings(dataset="esl", output_dir=str(tmp_path / "out"), trials=2, num_steps=8,
                       progress=False), log=lines.append)
  stored = json.loads((tmp_path / "out" / "run.json").read_text())
  assert len(stored["trials"]) == 2 and all(np.isfinite(r["auc"]) for r in stored["trials"])
  assert any("(steady state, 1 trial)" in line for line in lines), lines   # was "1 trials"
  with pytest.raises(cli.UserError, match=r"--cv=quick: class \d of esl has 1 labeled point\(s\) "
                     r"in the CV's split .* fewer than the 5 folds of the papers' CV\. Run without"):
    run.run(run.Settings(dataset="esl", output_dir=str(tmp_path / "cv"), trials=1, num_steps=8,
                         cv="quick", progress=False), log=lines.append)   # (a traceback before)
  y = np.repeat(np.arange(3), [2, 40, 40])
  for seed in range(20):
    plain = data_lib.split_semisupervised(seed, y, 41)
    covered = data_lib.split_semisupervised(seed, y, 41, cover_unlabeled=True)
    assert np.all(np.bincount(y[covered.unlabeled], minlength=3) > 0)
    if np.all(np.bincount(y[plain.unlabeled], minlength=3) > 0):
      np.testing.assert_array_equal(plain.labeled, covered.labeled)
    stratified = data_lib.split_semisupervised(seed, y, 79, stratify=True, cover_unlabeled=True)
    assert np.all(np.bincount(y[stratified.unlabeled], minlength=3) == 1)
  with pytest.raises(ValueError, match=r"fewer than 2 points left: one to label and one"):
    data_lib.split_semisupervised(0, np.repeat(np.arange(3), [1, 40, 40]), 10, cover_unlabeled=True)
  with pytest.raises(ValueError, match=r"leaves 2 unlabeled points, fewer than the 3 classes"):
    data_lib.split_semisupervised(0, y, 80, cover_unlabeled=True)


def test_one_trial_reports_no_spread_rather_than_zero(tmp_path):
  """--trials=1 printed "+- 0.0000 (std)" and stored auc_std 0.0: a spread of one value."""
  lines = []
  run.run(run.Settings(output_dir=str(tmp_path), trials=1, num_steps=8, num_frequencies=8,
                       progress=False), log=lines.append)
  stored = json.loads((tmp_path / "run.json").read_text())
  assert stored["auc_std"] is None and stored["mae_std"] is None
  assert any(line.endswith("(one trial: no spread)") and "ordinal AUC" in line for line in lines)
  assert any(line.startswith("  MAE: ") for line in lines)
  binary = run.summary_lines({**stored, "protocol": {**stored["protocol"], "num_classes": 2},
                              "auc_std": np.nan, "mae_std": np.nan})
  assert any(line.startswith("  error rate: ") for line in binary)   # a 0/1 error, not "MAE"
  assert not any("MAE" in line for line in binary)


def _wait_for(path, proc, timeout=240):
  start = time.monotonic()
  while not path.exists():
    assert proc.poll() is None, proc.communicate()
    assert time.monotonic() - start < timeout, f"{path} did not appear"
    time.sleep(0.005)


@pytest.mark.slow   # the CLI killed and resumed end to end (test_experiments_resume: the store)
def test_killed_run_resumes_to_the_uninterrupted_numbers(tmp_path):
  out = tmp_path / "killed"
  args = [sys.executable, "-m", "experiments.run", f"--trials={_TRIALS}", "--seed=3",
          f"--output_dir={out}", "--noprogress"] + [f"--{k}={v}" for k, v in _TINY.items()]
  proc = subprocess.Popen(args, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
  _wait_for(out / "cells" / "run" / "trial_00000.json", proc)
  proc.send_signal(signal.SIGKILL)
  proc.communicate()
  manifest = json.loads((out / "run.json").read_text())
  assert manifest["complete"] is False
  with pytest.raises(store_lib.StoreError, match="pass --resume to continue it"):
    store_lib.RunStore(out, "run").start({})
  resumed = subprocess.run(args + ["--resume", "--verbosity=1"], cwd=REPO_ROOT, text=True,
                           capture_output=True, check=False)
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert "already done, resumed" in resumed.stdout
  # --verbosity=1 adds the training segments' lines and the library's info, not JAX's logs.
  assert "step 1024/1024, max |f| on the labeled points" in resumed.stdout
  assert len(resumed.stderr.splitlines()) < 20
  result = json.loads((out / "run.json").read_text())
  assert result["complete"] is True and len(result["trials"]) == _TRIALS
  assert not [p for p in out.rglob("*") if p.name.startswith(reporting.TEMP_PREFIX)]
  assert "--resume" in result["environment"]["command_line"]
  expected = run.run(run.Settings(seed=3, trials=_TRIALS, output_dir=str(tmp_path / "whole"),
                                  progress=False, **_TINY), log=lambda _: None)
  for name in ("auc", "mae", "auc_per_split", "max_abs_score", "eta0", "roc"):
    assert [r[name] for r in result["trials"]] == [r[name] for r in expected["trials"]], name
  # Compilation is counted in the killed process's first trial and the resumed one's.
  firsts = [r["trial"] for r in result["trials"] if r["includes_compilation"]]
  assert firsts[0] == 0 and len(firsts) == 2
  assert result["timing"]["steady_trials"] == _TRIALS - 2


def test_the_command_line_is_quiet_and_never_replaces_a_finished_run(tmp_path):
  """The main job through its command line (a subprocess): a short report on stdout, nothing on
  stderr, the results, report and plots written; run again, it refuses to replace them."""
  out = tmp_path / "run"
  first = _script("--trials=2", f"--output_dir={out}", *_FAST)
  assert first.returncode == 0, first.stderr[-3000:]
  # A header, one line per trial, the summary; no log lines on stderr.
  lines = first.stdout.splitlines()
  assert lines[0].startswith("QS3ORAO on lev") and len(lines) <= 10
  assert [line.split(":")[0] for line in lines[1:3]] == ["trial 1/2", "trial 2/2"]
  assert first.stderr == ""
  assert "ordinal AUC" in first.stdout and "scored on" in first.stdout
  summary = json.loads((out / "run.json").read_text())
  assert len(summary["trials"]) == 2 and 0.6 < summary["auc_mean"] <= 1.0
  assert (out / "run.md").read_text().startswith("# QS3ORAO on lev")
  for png in ("run_auc.png", "run_roc.png", "run_max_abs_score.png"):
    assert (out / png).stat().st_size > 0
  before = (out / "run.json").stat().st_mtime_ns
  again = _script("--trials=2", f"--output_dir={out}", *_FAST)
  assert again.returncode == 2 and again.stderr.startswith(f"error: {out} holds the finished "
                                                          "results run.json; pass --overwrite")
  assert (out / "run.json").stat().st_mtime_ns == before


def test_run_json_records_what_ran_and_saved_models_predict_the_same(tmp_path):
  settings = run.Settings(output_dir=str(tmp_path), trials=2, save_models=True, num_steps=64,
                          num_frequencies=8, progress=False)
  run.run(settings, log=lambda _: None)
  stored = json.loads((tmp_path / "run.json").read_text())
  assert [r["eta0"] for r in stored["trials"]] == [pytest.approx(3.0)] * 2   # "auto", capped
  assert stored["timing"]["wall_time_s"] > 0 and stored["timing"]["compile_time_s"] >= 0
  assert all(r["compile_time_s"] >= 0 for r in stored["trials"])
  assert np.asarray(stored["trials"][0]["roc"]).shape == (4, run.ROC_POINTS)
  assert stored["data_files"] == {}             # lev is embedded: no data file was read
  packages = stored["environment"]["packages"]
  assert packages["qsg_jax"] == qsg_jax.__version__
  assert packages["jax"] == jax.__version__ and packages["jaxlib"] and packages["numpy"]
  assert packages["python"].count(".") == 2
  dataset = data_lib.load("lev")
  proto = protocols.protocol_for(dataset)
  for row in stored["trials"]:
    trial = protocols.make_trial(dataset, proto, protocols.trial_key(0, row["trial"]), 20000)
    model = qsg_jax.io.load(tmp_path / "models" / f"trial_{row['trial']:05d}.npz")
    aucs = qsg_jax.split_aucs(qsg_jax.io.frozen_scores(model, trial.x_eval), trial.y_eval,
                              proto.num_classes)
    np.testing.assert_allclose(aucs, row["auc_per_split"], atol=1e-6)
  with pytest.raises(store_lib.StoreError, match="pass --overwrite to replace it"):
    run.run(settings, log=lambda _: None)
  run.run(dataclasses.replace(settings, trials=1, overwrite=True), log=lambda _: None)
  assert len(json.loads((tmp_path / "run.json").read_text())["trials"]) == 1


def test_solver_flag_runs_and_records_the_direct_solver(tmp_path):
  """--solver=direct: the trials and the CV run qsg_jax.direct; run.json says so; the saved
  models (FrozenNystrom) predict the trials' numbers; DSG-only flags are a short error."""
  settings = run.Settings(output_dir=str(tmp_path), trials=2, save_models=True,
                          solver="direct", cv="quick", cv_unlabeled=200, progress=False)
  lines = []
  run.run(settings, log=lines.append)
  assert any("direct solver, scored on" in line for line in lines)   # the summary says which
  assert "(direct solver; " in (tmp_path / "run.md").read_text()
  stored = json.loads((tmp_path / "run.json").read_text())
  assert stored["solver"] == stored["solver_used"] == stored["settings"]["solver"] == "direct"
  assert stored["hyperparams"]["solver"] == "direct" and stored["cv"]["chosen"]
  assert [r["solver"] for r in stored["trials"]] == ["direct"] * 2
  assert [r["eta0"] for r in stored["trials"]] == [None, None]
  assert all(len(r["max_abs_score"]) == 1 for r in stored["trials"])
  dataset = data_lib.load("lev")
  proto = protocols.protocol_for(dataset)
  for row in stored["trials"]:
    trial = protocols.make_trial(dataset, proto, protocols.trial_key(0, row["trial"]), 20000)
    model = qsg_jax.io.load(tmp_path / "models" / f"trial_{row['trial']:05d}.npz")
    assert isinstance(model, qsg_jax.io.FrozenNystrom)
    aucs = qsg_jax.split_aucs(qsg_jax.io.frozen_scores(model, trial.x_eval), trial.y_eval,
                              proto.num_classes)
    np.testing.assert_allclose(aucs, row["auc_per_split"], atol=1e-6)
  assert run.solver_of(run.Settings(solver="auto")) == "direct"
  assert run.solver_of(run.Settings(solver="auto", num_steps=64)) == "dsg"
  assert run.solver_of(run.Settings()) == "dsg"   # the papers' reproduction by default
  bad = dataclasses.replace(settings, num_steps=64, output_dir=str(tmp_path / "bad"))
  with pytest.raises(cli.SHORT_ERRORS, match=r"--solver=direct: \['num_steps'\] only mean "
                                             "something to DSG"):
    run.run(bad, log=lambda _: None)
  assert not (tmp_path / "bad").exists()


def test_data_files_are_hashed_from_the_loader_description(tmp_path):
  path = tmp_path / "a.csv"
  path.write_bytes(b"1,2\n")
  dataset = types.SimpleNamespace(description=f"Some source. Files: {path}.")
  assert reporting.data_files(dataset) == {str(path): hashlib.sha256(b"1,2\n").hexdigest()}
  assert reporting.data_files(types.SimpleNamespace(description="Embedded.")) == {}


def test_plots_are_redrawn_from_the_saved_results(tmp_path):
  row = lambda t: {"trial": t, "auc": 0.8, "auc_per_split": [0.7, 0.9],
                   "max_abs_score": [1.0, 2.0, 1.5], "roc": [[0.0, 0.5, 1.0]] * 2}
  (tmp_path / "cells" / "run").mkdir(parents=True)
  for t in range(2):
    (tmp_path / "cells" / "run" / f"trial_{t:05d}.json").write_text(json.dumps(row(t)))
  plot_lib.main(["plot", str(tmp_path)])        # an unfinished run: from its cells
  for png in ("run_auc.png", "run_roc.png", "run_max_abs_score.png"):
    assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  zeros = tmp_path / "zeros" / "cells" / "run"   # a huge lam: every score 0 has no log scale
  zeros.mkdir(parents=True)                       # (matplotlib warned; warnings are errors here)
  (zeros / "trial_00000.json").write_text(json.dumps(dict(row(0), max_abs_score=[0.0, 0.0])))
  plot_lib.draw(tmp_path / "zeros")
  with pytest.raises(FileNotFoundError, match="holds no results of experiments.run"):
    plot_lib.draw(tmp_path / "nothing")
  with pytest.raises(SystemExit, match="usage: python -m experiments.plot RESULTS_DIR"):
    plot_lib.main(["plot"])
