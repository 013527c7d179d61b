"""Two processes on localhost train the same model as one process: the multi-host path, run.

Each test launches ``tests/_multiprocess_worker.py`` as 2 processes of 2 CPU devices each
(cross-process collectives over gloo on 127.0.0.1, a free port, a timeout, every process killed
in a ``finally``), and, for the reference, as 1 process of 4 devices. Workers write the full
arrays they hold to a temporary directory and the comparison happens here, so a process whose
coefficients differ fails the test.
"""

import contextlib
import json
import os
import socket
import subprocess
import sys

import jax
import numpy as np
import pytest

from qsg_jax import distributed
from qsg_jax import engine

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_multiprocess_worker.py")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 240


def _free_port():
  with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _launch(mode, data_dir, out_dir, num_processes, devices_per_process):
  """Starts ``num_processes`` workers; returns the Popen objects (the caller must reap them).

  XLA's backend optimizations are off (a third less CPU, nearly all of it compilation); every
  layout compared runs with the same flags.
  """
  env = dict(os.environ, JAX_PLATFORMS="cpu",
             XLA_FLAGS=f"--xla_force_host_platform_device_count={devices_per_process} "
                 "--xla_backend_optimization_level=0")
  for name in (distributed.COORDINATOR_ENV, distributed.NUM_PROCESSES_ENV,
               distributed.PROCESS_ID_ENV):
    env.pop(name, None)
  port = _free_port()
  return [subprocess.Popen([sys.executable, WORKER, mode, str(data_dir), str(out_dir),
                            str(num_processes), str(i), str(port)], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
          for i in range(num_processes)]


def run_workers(mode, data_dir, groups):
  """Runs every group of workers at once: {out_dir: (num_processes, devices_per_process)}.

  Returns {out_dir: [results of process 0, 1, ...]}; kills every worker on error or timeout.
  """
  procs = []
  try:
    for out_dir, (num_processes, devices) in groups.items():
      os.makedirs(out_dir)
      procs += [(out_dir, p) for p in _launch(mode, data_dir, out_dir, num_processes, devices)]
    for _, p in procs:
      output, _ = p.communicate(timeout=TIMEOUT_S)
      assert p.returncode == 0, f"worker {p.args[4:6]} failed:\n{output[-4000:]}"
  finally:
    for _, p in procs:
      if p.poll() is None:
        p.kill()
        p.communicate()
  return {out_dir: [dict(np.load(os.path.join(out_dir, f"p{i}.npz"))) for i in range(n)]
          for out_dir, (n, _) in groups.items()}


def assert_float32_close(actual, desired, name):
  """Equal up to float32 rounding: sums over devices are added in another order, which moves
  coefficients by a few ulps of the largest one, and scores (sums of T * 2m such terms) by up
  to ~1e-5 of the largest score (measured: 4e-6)."""
  desired = np.asarray(desired)
  np.testing.assert_allclose(actual, desired, rtol=1e-5, atol=1e-5 * np.abs(desired).max(),
                             err_msg=name)


def _write_data(data_dir, n_l=40, n_u=301, d=4):
  rng = np.random.default_rng(0)
  y3 = np.concatenate([np.arange(3), rng.integers(0, 3, n_l - 3)]).astype(np.int32)
  x_l = (rng.random((n_l, d)) + 0.3 * y3[:, None]).astype(np.float32)
  np.savez(data_dir / "labeled.npz", x=x_l, y3=y3, y2=(y3 > 0).astype(np.int32))
  x_u = rng.random((n_u, d)).astype(np.float32)
  np.save(data_dir / "x_u.npy", x_u)
  np.save(data_dir / "x_test.npy", x_u[:101])


@pytest.mark.slow   # DSG on 2 processes x 2 devices (direct's 2-process test runs by default)
def test_two_processes_equal_one_process_of_four_devices(tmp_path):
  _write_data(tmp_path)
  one, two = tmp_path / "one_process", tmp_path / "two_processes"
  results = run_workers("train", tmp_path, {one: (1, 4), two: (2, 2)})
  [reference] = results[one]
  assert reference["device_count"] == 4 and reference["process_index"] == 0
  names = [n for n in reference if n.startswith("k")]
  assert len(names) == 7, names
  assert np.abs(reference["k3_coef"]).max() > 0.05   # a run that learned something
  for i, worker in enumerate(results[two]):
    assert worker["device_count"] == 4 and worker["process_index"] == i
    for name in names:
      assert_float32_close(worker[name], reference[name], f"process {i}: {name}")


def test_the_comparison_fails_when_a_process_differs():
  reference = {"coef": np.linspace(-0.5, 0.7, 48, dtype=np.float32).reshape(4, 12)}
  assert_float32_close(reference["coef"] + 3e-7, reference["coef"], "rounding passes")
  changed = reference["coef"].copy()
  changed[2, 5] += 1e-4   # one coefficient of one process off by far more than rounding
  with pytest.raises(AssertionError, match="process 1: coef"):
    assert_float32_close(changed, reference["coef"], "process 1: coef")


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"),
                    reason="measures peak resident memory through Linux /proc")
@pytest.mark.slow   # 2 processes, a 256 MiB file (test_direct runs 2 processes by default)
def test_each_process_reads_only_its_own_strata(tmp_path):
  n_u, d = 1 << 20, 64                     # 256 MiB of float32; each of 2 processes owns half
  _write_data(tmp_path, n_u=8, d=d)
  path = tmp_path / "x_u.npy"
  try:
    x_u = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n_u, d))
    for start in range(0, n_u, 1 << 16):
      x_u[start:start + (1 << 16)] = np.random.default_rng(start).random((1 << 16, d))
    x_u.flush()
    del x_u
    file_bytes = os.path.getsize(path)
    out = tmp_path / "memory"
    workers = run_workers("memory", tmp_path, {out: (2, 2)})[out]
  finally:
    os.remove(path)
  for i, worker in enumerate(workers):
    assert worker["finite"] and worker["global_rows"] == n_u
    assert worker["local_rows"] == n_u // 2, f"process {i} holds {worker['local_rows']} rows"
    growth = worker["after"] - worker["before"]
    print(f"process {i}: RSS {worker['before'] / 2**20:.0f} MiB before loading, peak "
          f"+{(worker['loaded'] - worker['before']) / 2**20:.0f} MiB after loading, "
          f"+{growth / 2**20:.0f} MiB after training; file {file_bytes / 2**20:.0f} MiB")
    # Its own half must be resident; the other half must never have been (the read buffer
    # is a few MiB: 64Ki rows of the file at a time).
    assert 0.45 * file_bytes < growth < 0.6 * file_bytes, (growth, file_bytes)


@pytest.fixture
def no_launch_env(monkeypatch):
  """No launcher variables, and a fake jax.distributed.initialize that records its arguments."""
  for name in (distributed.COORDINATOR_ENV, distributed.NUM_PROCESSES_ENV,
               distributed.PROCESS_ID_ENV, "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"):
    monkeypatch.delenv(name, raising=False)
  calls = []
  monkeypatch.setattr(jax.distributed, "initialize", lambda **kwargs: calls.append(kwargs))
  monkeypatch.setattr(jax.distributed, "is_initialized", lambda: False)
  monkeypatch.setattr(jax.config, "update", lambda *args: calls.append(args))
  return calls


def test_initialize_is_a_no_op_for_one_process(no_launch_env, monkeypatch):
  assert distributed.initialize() is False
  assert distributed.initialize("10.0.0.1:1234", 1, 0) is False
  monkeypatch.setenv("SLURM_NTASKS", "1")
  assert distributed.initialize() is False
  assert no_launch_env == []


def test_initialize_reads_arguments_then_environment(no_launch_env, monkeypatch):
  assert distributed.initialize("10.0.0.1:1234", 4, 3) is True
  monkeypatch.setenv(distributed.COORDINATOR_ENV, "10.0.0.2:99")
  monkeypatch.setenv(distributed.NUM_PROCESSES_ENV, "8")
  monkeypatch.setenv(distributed.PROCESS_ID_ENV, "5")
  assert distributed.initialize() is True
  assert distributed.initialize(process_id=6, timeout_s=20) is True
  wait = dict(initialization_timeout=300)   # JAX's default, which a user can now shorten
  expected = [dict(coordinator_address="10.0.0.1:1234", num_processes=4, process_id=3, **wait),
              dict(coordinator_address="10.0.0.2:99", num_processes=8, process_id=5, **wait),
              dict(coordinator_address="10.0.0.2:99", num_processes=8, process_id=6,
                   initialization_timeout=20)]
  assert [c for c in no_launch_env if isinstance(c, dict)] == expected
  assert ("jax_cpu_collectives_implementation", "gloo") in no_launch_env


def test_initialize_leaves_scheduler_detection_to_jax(no_launch_env, monkeypatch):
  monkeypatch.setenv("SLURM_NTASKS", "16")
  assert distributed.initialize() is True
  assert no_launch_env[-1] == dict(coordinator_address=None, num_processes=None,
                                   process_id=None, initialization_timeout=300)


def test_initialize_errors(no_launch_env, monkeypatch):
  with pytest.raises(ValueError, match=r"needs all of .* received coordinator_address="
                     r"'10.0.0.1:1234', num_processes=2, process_id=None"):
    distributed.initialize("10.0.0.1:1234", 2)
  with pytest.raises(ValueError, match="process_id must be in 0..num_processes-1; received "
                     "process_id=2, num_processes=2"):
    distributed.initialize("10.0.0.1:1234", 2, 2)
  monkeypatch.setenv(distributed.NUM_PROCESSES_ENV, "two")
  with pytest.raises(ValueError, match="JAX_NUM_PROCESSES='two' must be an integer"):
    distributed.initialize("10.0.0.1:1234", process_id=0)
  with pytest.raises(ValueError, match="timeout_s must be a whole number >= 1; received 0"):
    distributed.initialize("10.0.0.1:1234", 2, 0, timeout_s=0)
  monkeypatch.setattr(jax.distributed, "is_initialized", lambda: True)
  with pytest.raises(RuntimeError, match="already initialized"):
    distributed.initialize("10.0.0.1:1234", 2, 0)
  assert not [c for c in no_launch_env if isinstance(c, dict)]


def test_load_unlabeled_equals_shard_unlabeled(tmp_path, monkeypatch):
  monkeypatch.setattr(distributed, "_READ_ROWS", 4)     # several reads per stratum
  x = np.random.default_rng(0).random((23, 3)).astype(np.float32)
  np.save(tmp_path / "x32.npy", x)
  np.save(tmp_path / "x64.npy", x.astype(np.float64))
  mesh = distributed.global_mesh()
  expected = engine.shard_unlabeled(x, mesh.shape["data"])
  for source in (str(tmp_path / "x32.npy"), tmp_path / "x64.npy", x,
                 np.load(tmp_path / "x32.npy", mmap_mode="r")):
    loaded = distributed.load_unlabeled(source, mesh)
    assert loaded.num_unlabeled == 23 and loaded.x.dtype == np.float32
    assert loaded.x.sharding == jax.sharding.NamedSharding(mesh, jax.P("data"))
    np.testing.assert_array_equal(loaded.x, expected)


def test_load_unlabeled_errors(tmp_path):
  mesh = distributed.global_mesh()
  x = np.ones((10, 2), np.float32)
  x[7, 1] = np.nan
  np.save(tmp_path / "nan.npy", x)
  for source in (str(tmp_path / "nan.npy"), x):
    with pytest.raises(ValueError, match=r"NaN or infinite values \(first at row 7\)"):
      distributed.load_unlabeled(source, mesh)
  np.save(tmp_path / "vector.npy", np.ones(10, np.float32))
  with pytest.raises(ValueError, match=r"must hold a C-ordered numeric \[n_u, d\] array; "
                     r"received shape \(10,\)"):
    distributed.load_unlabeled(str(tmp_path / "vector.npy"), mesh)
  with pytest.raises(ValueError, match=r"must be \[n_u, d\]; received shape \(10,\)"):
    distributed.load_unlabeled(np.ones(10), mesh)
  with open(tmp_path / "short.npy", "wb") as f:
    np.save(f, np.ones((10, 2), np.float32))
    f.truncate(f.tell() - 8)
  with pytest.raises(ValueError, match="is truncated"):
    distributed.load_unlabeled(str(tmp_path / "short.npy"), mesh)
  with pytest.raises(ValueError, match="mesh has no axis 'rows'; its axes are"):
    distributed.load_unlabeled(x, mesh, axis_name="rows")
  # Sweep X: the checks of every other unlabeled source (complex numbers trained on their real
  # part, 1e39 became inf and an internal error, norms whose squares overflow trained).
  ones = np.ones((10, 2))
  big, huge = ones.copy(), ones.copy()
  big[6, 0], huge[8, 1] = 1e39, 1e20
  np.save(tmp_path / "big.npy", big)
  for source, error, pattern in [
      (ones + 1j, TypeError, "the unlabeled source must be real numbers"),
      (np.full((10, 2), "a"), TypeError, "the unlabeled source must be real numbers"),
      (big, ValueError, r"beyond the float32 range .* \(first at row 6"),
      (str(tmp_path / "big.npy"), ValueError, r"beyond the float32 range .* \(first at row 6"),
      (huge, ValueError, r"norms up to 1e\+20: their squares .* \(the largest at row 8\)")]:
    with pytest.raises(error, match=pattern):
      distributed.load_unlabeled(source, mesh)
  with pytest.raises(TypeError, match="mesh must be a jax.sharding.Mesh; received NoneType"):
    distributed.load_unlabeled(x, None)


def test_place_train_data_places_once():
  mesh = distributed.global_mesh()
  x_u = engine.shard_unlabeled(np.ones((5, 2), np.float32), mesh.shape["data"])
  data = engine.TrainData(np.ones((3, 2), np.float32), np.array([0, 1, 1]), x_u)
  placed = engine.sharding.place_train_data(data, mesh)
  assert placed.x_labeled.sharding == jax.sharding.NamedSharding(mesh, jax.P())
  assert placed.x_unlabeled.sharding == jax.sharding.NamedSharding(mesh, jax.P("data"))
  again = engine.sharding.place_train_data(placed, mesh)
  assert all(a is b for a, b in zip(again, placed))   # placed arrays are not copied again
  np.testing.assert_array_equal(placed.x_unlabeled, x_u)


def test_docstring_examples_run():
  import doctest   # pylint: disable=g-import-not-at-top
  finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner()
  for test in finder.find(distributed, "distributed"):
    runner.run(test)
  assert runner.summarize(verbose=False) == doctest.TestResults(failed=0, attempted=2)


@pytest.mark.slow   # benchmark / reproduction smoke run: `make test-slow`
def test_bench_multiprocess_smoke(tmp_path):
  proc = subprocess.run(
      [sys.executable, "-m", "experiments.bench_multiprocess", "--num_processes=2",
       "--num_steps=8", "--num_unlabeled=400", "--num_labeled=20", "--rounds=1",
       f"--out={tmp_path}", f"--timeout_s={TIMEOUT_S}"],
      cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S + 30, check=False)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  [row] = json.loads((tmp_path / "results.json").read_text())
  assert row["num_processes"] == 2 and row["devices_per_process"] == 2
  assert row["num_steps"] == 8 and 0 < row["collective_share"]
  assert row["floats_reduced_per_step"] == 1 + 2 * 2 * 20 + 2 * 32
