r"""Time per iteration on 1 vs 2 localhost processes, and the share spent in collectives.

  python -m experiments.bench_multiprocess                    # 1 process x 4 devices vs 2 x 2
  python -m experiments.bench_multiprocess --num_steps=256 --num_unlabeled=200000

Both layouts train the same model (same key, ``num_shards`` = 4: the same coefficients to
float32 rounding) on CPU devices, cross-process collectives over gloo on 127.0.0.1. Each layout
is timed twice in the same run, after compiling: the whole training (``engine.train_sharded``),
and a program that does only this training's collectives (per step: psums of a scalar, of two
[k-1, S] vectors and of a [2m] vector, the values depending on the step so nothing is folded),
so collectives / training is the share of a step spent communicating (CPU collectives do not
overlap with compute). Prints a table and writes results/bench_multiprocess/results.json.
"""

import contextlib
import functools
import json
import os
import socket
import subprocess
import sys
import time

from absl import app
from absl import flags
import jax
import jax.numpy as jnp
import numpy as np

_PROCESSES = flags.DEFINE_list("num_processes", ["1", "2"], "Process counts to compare.")
_DEVICES = flags.DEFINE_integer("devices", 4, "Devices in all (CPU devices split over processes).")
_STEPS = flags.DEFINE_integer("num_steps", 256, "Iterations T per timed run.")
_N_U = flags.DEFINE_integer("num_unlabeled", 100_000, "Unlabeled points.")
_N_L = flags.DEFINE_integer("num_labeled", 200, "Labeled points (S = n_l slots per step).")
_DIM = flags.DEFINE_integer("dim", 16, "Features d.")
_CLASSES = flags.DEFINE_integer("num_classes", 3, "k (k - 1 subproblems).")
_ROUNDS = flags.DEFINE_integer("rounds", 3, "Timed repetitions (best is reported).")
_OUT = flags.DEFINE_string("out", "results/bench_multiprocess", "Output directory.")
_TIMEOUT = flags.DEFINE_integer("timeout_s", 900, "Kill the workers after this many seconds.")
# Set by the launcher for its workers.
_WORKER = flags.DEFINE_integer("process_id", None, "Worker mode: this process's id.")
_WORKER_PROCESSES = flags.DEFINE_integer("worker_num_processes", 1, "Worker mode: P.")
_PORT = flags.DEFINE_integer("port", 0, "Worker mode: coordinator port on 127.0.0.1.")
_RESULT = flags.DEFINE_string("result", None, "Worker mode: JSON file process 0 writes.")


def _best_seconds(fn, rounds):
  best = float("inf")
  for _ in range(rounds):
    start = time.perf_counter()
    jax.block_until_ready(fn())
    best = min(best, time.perf_counter() - start)
  return best


@functools.partial(jax.jit, static_argnames=("mesh", "num_steps", "k", "s", "m"))
def _collectives_only(seed, mesh, num_steps, k, s, m):
  """The training's per-step psums alone, ``num_steps`` times, inside ``shard_map``."""
  def body(acc, t):
    x = acc + t.astype(jnp.float32)
    total = jax.lax.psum(x, "data")                                    # number of points
    l3 = jax.lax.psum(jnp.full((k - 1, s), x), "data")                 # [k-1, S]
    l6 = jax.lax.psum(jnp.full((k - 1, s), total), "data")             # [k-1, S]
    grad = jax.lax.psum(jnp.full((2 * m,), l3[0, 0] + l6[-1, -1]), "data")  # [2m]
    return grad[0] * 1e-9, None

  fn = jax.shard_map(lambda a: jax.lax.scan(body, a[0], jnp.arange(num_steps))[0][None],
                     mesh=mesh, in_specs=jax.P("data"), out_specs=jax.P("data"),
                     check_vma=False)
  return fn(seed)


def worker():
  """One process: trains and times; process 0 writes the timings."""
  from qsg_jax import distributed   # pylint: disable=g-import-not-at-top
  from qsg_jax import engine        # pylint: disable=g-import-not-at-top
  num_processes = _WORKER_PROCESSES.value
  if num_processes > 1:
    distributed.initialize(f"127.0.0.1:{_PORT.value}", num_processes, _WORKER.value)
  mesh = distributed.global_mesh()
  devices, k, t = jax.device_count(), _CLASSES.value, _STEPS.value
  rng = np.random.default_rng(0)            # the same data in every process
  y = np.concatenate([np.arange(k), rng.integers(0, k, _N_L.value - k)]).astype(np.int32)
  x_l = (rng.random((_N_L.value, _DIM.value)) + 0.3 * y[:, None]).astype(np.float32)
  x_u = rng.random((_N_U.value, _DIM.value)).astype(np.float32)
  data = engine.TrainData(jnp.asarray(x_l), jnp.asarray(y),
                          engine.shard_unlabeled(x_u, devices))
  config = engine.make_config(k, t, num_shards=devices)
  hyper = engine.Hyperparams(jnp.float32(0.5), jnp.float32(1e-3), jnp.full(k - 1, 0.5),
                             jnp.float32(1.0))
  state = engine.init(jax.random.key(0), data, config, num_unlabeled=_N_U.value)
  train = lambda: engine.train_sharded(state, data, hyper, config, t, mesh)[0].coef
  coef = np.asarray(train())                # compiles
  seed = jax.device_put(jnp.zeros(devices), jax.sharding.NamedSharding(mesh, jax.P("data")))
  comm = lambda: _collectives_only(seed, mesh, t, k, _N_L.value, config.num_frequencies)
  jax.block_until_ready(comm())             # compiles
  train_s = _best_seconds(train, _ROUNDS.value)
  comm_s = _best_seconds(comm, _ROUNDS.value)
  if jax.process_index() == 0:
    floats = 1 + 2 * (k - 1) * _N_L.value + 2 * config.num_frequencies
    with open(_RESULT.value, "w") as f:
      json.dump({"num_processes": num_processes, "devices": devices,
                 "devices_per_process": jax.local_device_count(), "num_steps": t,
                 "ms_per_step": 1e3 * train_s / t, "collective_ms_per_step": 1e3 * comm_s / t,
                 "collective_share": comm_s / train_s, "floats_reduced_per_step": floats,
                 "coef_checksum": float(np.abs(coef).sum())}, f)


def _free_port():
  with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _run_layout(num_processes):
  """Launches ``num_processes`` workers of ``devices / P`` CPU devices; returns process 0's JSON."""
  devices = _DEVICES.value
  if devices % num_processes:
    raise ValueError(f"--devices={devices} must be a multiple of each process count; received "
                     f"{num_processes} processes.")
  os.makedirs(_OUT.value, exist_ok=True)
  result = os.path.abspath(os.path.join(_OUT.value, f"p{num_processes}.json"))
  env = dict(os.environ, JAX_PLATFORMS="cpu",
             XLA_FLAGS=f"--xla_force_host_platform_device_count={devices // num_processes}")
  port = _free_port()
  flags_ = [f"--{f.name}={f.value}" for f in (_STEPS, _N_U, _N_L, _DIM, _CLASSES, _ROUNDS)]
  procs = []
  try:
    for i in range(num_processes):
      procs.append(subprocess.Popen(
          [sys.executable, "-m", "experiments.bench_multiprocess", *flags_, f"--process_id={i}",
           f"--worker_num_processes={num_processes}", f"--port={port}", f"--result={result}"],
          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for p in procs:
      output, _ = p.communicate(timeout=_TIMEOUT.value)
      if p.returncode:
        raise RuntimeError(f"worker failed (exit {p.returncode}):\n{output[-3000:]}")
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
        p.communicate()
  with open(result) as f:
    return json.load(f)


def main(argv):
  if _WORKER.value is not None:
    worker()
    return
  del argv
  rows = [_run_layout(int(p)) for p in _PROCESSES.value]
  print(f"T={_STEPS.value} n_u={_N_U.value} n_l={_N_L.value} d={_DIM.value} k={_CLASSES.value} "
        f"devices={_DEVICES.value} (CPU, gloo over loopback)")
  print("processes  devices/process  ms/step  collectives ms/step  share  floats reduced/step")
  for r in rows:
    print(f"{r['num_processes']:9d}  {r['devices_per_process']:15d}  {r['ms_per_step']:7.3f}  "
          f"{r['collective_ms_per_step']:19.3f}  {r['collective_share']:5.1%}  "
          f"{r['floats_reduced_per_step']:19d}")
  with open(os.path.join(_OUT.value, "results.json"), "w") as f:
    json.dump(rows, f, indent=1)


if __name__ == "__main__":
  app.run(main)
