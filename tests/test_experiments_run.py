"""The main job's reliability: flag validation, atomic files, kill-and-resume, plots, seeds.

The kill test starts ``python -m experiments.run``, SIGKILLs it as soon as its first trial file
appears, resumes it, and compares every trial's numbers with an uninterrupted run of the same
flags (run in process through ``main_job.run_job``, the function the script calls).
"""

import json
import signal
import subprocess
import sys
import time

from absl import flags
import numpy as np
import pytest

from experiments import common_flags
from experiments import main_job
from experiments import plot as plot_lib
from experiments import progress as progress_lib
from experiments import protocols
from experiments import reporting
from experiments import run
from experiments import run_store
from qsg_jax import data as data_lib
from qsg_jax import defaults
from tests.conftest import REPO_ROOT

# Steady-state trials take ~0.5 s, so a kill right after the first trial file lands mid-run.
_TINY = dict(num_steps=1024, num_frequencies=8)
_TRIALS = 3


def _flag_values():
  fv = flags.FlagValues()
  common_flags.define_run_flags(output_dir="results/{dataset}", flag_values=fv)
  common_flags.define_eval_size_flag(flag_values=fv)
  common_flags.define_engine_flags(flag_values=fv)
  return fv


@pytest.mark.parametrize("arg, message", [
    ("--trials=0", r"flag --trials=0: --trials must be an integer >= 1; pass e.g. --trials=1"),
    ("--eval_size=-1", r"--eval_size must be an integer >= 0 \(0 = every point\)"),
    ("--num_steps=0", r"--num_steps must be an integer >= 1"),
    ("--labeled_batch_size=0", r"--labeled_batch_size must be an integer >= 1 \(or unset\)"),
    ("--gamma=1.5", r"--gamma must be in \[0, 1\]"),
    ("--sigma=0", r"--sigma must be a number > 0; pass e.g. --sigma=0.1"),
    ("--lam=-1", r"--lam must be a number >= 0"),
    ("--step_size=-3", r"--step_size must be 'auto' or a number > 0"),
])
def test_flag_validators_reject_out_of_range_values(arg, message):
  fv = _flag_values()
  with pytest.raises(flags.IllegalFlagValueError, match=message):
    fv(["prog", arg])


def test_engine_flags_default_to_the_library_defaults_and_help_shows_them():
  fv = _flag_values()
  fv(["prog"])
  assert common_flags.engine_kwargs(flag_values=fv) == defaults.HYPERPARAMS
  text = fv.get_help()
  for name in ("sigma", "lam", "gamma", "step_size", "num_steps", "num_frequencies"):
    assert f"(default: '{defaults.HYPERPARAMS[name]}')" in text, name
  with pytest.raises(ValueError, match=r"unknown engine flags \['eta0'\]"):
    common_flags.define_engine_flags(["eta0"], flag_values=flags.FlagValues())


def test_main_job_cli_rejects_bad_flags_before_loading_data():
  proc = subprocess.run([sys.executable, "-m", "experiments.run", "--trials=0"], cwd=REPO_ROOT,
                        text=True, capture_output=True, check=False)
  assert proc.returncode != 0
  assert "--trials must be an integer >= 1" in proc.stderr


def test_multi_process_flags_need_all_three_or_none():
  with pytest.raises(ValueError, match="needs all of coordinator_address.*received "
                                       "coordinator_address='host:1234', num_processes=None"):
    run.initialize_distributed(coordinator_address="host:1234", num_processes=None,
                               process_id=None, auto=False)
  with pytest.raises(ValueError, match=r"process_id must be in 0..num_processes-1; received "
                                       r"process_id=2, num_processes=2"):
    run.initialize_distributed(coordinator_address="host:1234", num_processes=2, process_id=2,
                               auto=False)
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
  assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_unwritable_output_dir_is_refused_before_training(tmp_path):
  (tmp_path / "file").write_text("")
  with pytest.raises(PermissionError, match=r"--output_dir=.*file/out is not writable"):
    reporting.check_writable(tmp_path / "file" / "out")
  with pytest.raises(PermissionError, match="is not writable"):
    main_job.run_job(dataset="lev", data_dir=None, num_labeled=None, num_classes=None,
                     eval_size=0, seed=0, trials=1, output_dir=str(tmp_path / "file" / "out"),
                     params=dict(defaults.HYPERPARAMS), log=lambda _: None)


def test_run_store_refuses_what_it_cannot_resume(tmp_path):
  settings = {"seed": 0, "hyperparams": {"lam": 1e-3}}
  with pytest.raises(run_store.ResumeError, match="holds no run to resume"):
    run_store.RunStore(tmp_path / "empty").start(settings, 2, resume=True)
  store = run_store.RunStore(tmp_path / "a")
  assert store.start(settings, 2, resume=False) == {}
  store.save_trial(0, {"trial": 0, "auc": 0.9}, 1, 2)
  with pytest.raises(run_store.ResumeError, match=r"unfinished run \(1 of 2 trials done\); "
                                                   "pass --resume"):
    run_store.RunStore(tmp_path / "a").start(settings, 2, resume=False)
  other = {"seed": 1, "hyperparams": {"lam": 1e-2}}
  with pytest.raises(run_store.ResumeError, match=r"(?s)hyperparams: the stored run has "
                                                   r"\{'lam': 0.001\}.*seed: the stored run has 0"):
    run_store.RunStore(tmp_path / "a").start(other, 2, resume=True)
  assert run_store.RunStore(tmp_path / "a").start(settings, 2, resume=True) == {
      0: {"trial": 0, "auc": 0.9}}


def test_trials_of_different_seeds_share_no_split():
  dataset = data_lib.load("lev")
  proto = protocols.protocol_for(dataset)
  labeled = lambda seed, t: protocols.make_trial(
      dataset, proto, protocols.trial_key(seed, t), eval_size=0).x_labeled
  # seed + t would give seed 0's trial 1 the split of seed 1's trial 0.
  assert not np.array_equal(labeled(0, 1), labeled(1, 0))
  np.testing.assert_array_equal(labeled(0, 1), labeled(0, 1))


def test_progress_bar_prints_a_few_lines_with_an_eta_when_not_a_terminal(capsys):
  import io  # pylint: disable=g-import-not-at-top
  stream = io.StringIO()
  bar = progress_lib.ProgressBar(200, unit="steps", stream=stream)
  for done in range(0, 201, 5):
    bar.update(done)
  bar.close()
  lines = stream.getvalue().splitlines()
  assert len(lines) == 11 and lines[-1].startswith("[" + "#" * 30 + "] 100% 200/200 steps")
  assert "ETA 0:00" in lines[-1] and "ETA ?" in lines[0]
  assert progress_lib.format_seconds(3725) == "1:02:05"
  assert progress_lib.format_seconds(65) == "1:05"


def _wait_for(path, proc, timeout=240):
  start = time.monotonic()
  while not path.exists():
    assert proc.poll() is None, proc.communicate()
    assert time.monotonic() - start < timeout, f"{path} did not appear"
    time.sleep(0.005)


def test_killed_run_resumes_to_the_uninterrupted_numbers(tmp_path):
  out = tmp_path / "killed"
  args = [sys.executable, "-m", "experiments.run", f"--trials={_TRIALS}", "--seed=3",
          f"--output_dir={out}", "--noprogress"] + [f"--{k}={v}" for k, v in _TINY.items()]
  proc = subprocess.Popen(args, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
  _wait_for(out / "trials" / "trial_00000.json", proc)
  proc.send_signal(signal.SIGKILL)
  proc.communicate()
  manifest = json.loads((out / "run.json").read_text())
  assert manifest["complete"] is False and manifest["trials_done"] < _TRIALS
  # Without --resume the unfinished run is not overwritten (the script exits 2 with this).
  with pytest.raises(run_store.ResumeError, match="pass --resume to continue it"):
    run_store.RunStore(out).start({}, _TRIALS, resume=False)
  resumed = subprocess.run(args + ["--resume"], cwd=REPO_ROOT, text=True, capture_output=True,
                           check=False)
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert "already done, resumed" in resumed.stdout
  result = json.loads((out / "run.json").read_text())
  assert result["complete"] is True and len(result["trials"]) == _TRIALS
  assert not [p for p in out.rglob("*") if p.name.startswith(reporting.TEMP_PREFIX)]
  env = result["environment"]
  assert env["packages"]["jax"] and env["packages"]["qsg_jax"] and env["device_count"] >= 1
  assert "--resume" in env["command_line"]
  expected = main_job.run_job(
      dataset="lev", data_dir=None, num_labeled=None, num_classes=None, eval_size=20000,
      seed=3, trials=_TRIALS, output_dir=str(tmp_path / "whole"), show_progress=False,
      params=dict(defaults.HYPERPARAMS, **_TINY), log=lambda _: None)
  for name in ("auc", "mae", "auc_per_split", "max_abs_score"):
    assert [r[name] for r in result["trials"]] == [r[name] for r in expected["trials"]], name
  assert result["auc_mean"] == expected["auc_mean"]
  # Compilation is counted in the killed process's first trial and the resumed one's.
  firsts = [r["trial"] for r in result["trials"] if r["includes_compilation"]]
  assert firsts[0] == 0 and len(firsts) == 2
  assert result["timing"]["steady_trials"] == _TRIALS - 2
  # The plots are redrawn from the saved results alone.
  for png in ("run_auc.png", "run_max_abs_score.png"):
    (out / png).unlink()
  plot_lib.main(["plot", str(out)])
  for png in ("run_auc.png", "run_max_abs_score.png"):
    assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_says_what_is_missing(tmp_path):
  with pytest.raises(FileNotFoundError, match="holds no results of experiments.run"):
    plot_lib.draw(tmp_path)
  with pytest.raises(SystemExit, match="usage: python -m experiments.plot RESULTS_DIR"):
    plot_lib.main(["plot"])
