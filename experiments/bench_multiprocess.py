r"""Time per iteration on 1 vs 2 localhost processes, and the share spent in collectives.

  python -m experiments.bench_multiprocess                    # 1 process x 4 devices vs 2 x 2
  python -m experiments.bench_multiprocess --num_steps=256 --num_unlabeled=200000

Both layouts train the same model (same key, ``num_shards`` = 4: the same coefficients to
float32 rounding) on CPU devices, cross-process collectives over gloo on 127.0.0.1. Each layout
is timed twice in the same run, after compiling: the whole training (``engine.train_sharded``),
and a program that does only this training's collectives (per step: psums of a scalar, of two
[k-1, S] vectors and of a [2m] vector, the values depending on the step so nothing is folded),
so collectives / training is the share of a step spent communicating (CPU collectives do not
overlap with compute). Prints a table and writes --output_dir/bench_multiprocess.{json,md} (and
the rows alone in results.json).
"""

import contextlib
import dataclasses
import functools
import json
import os
import socket
import subprocess
import sys
import time
from typing import Optional

from absl import flags
import jax
import jax.numpy as jnp
import numpy as np

from experiments.common import cli
from experiments.common import reporting
from experiments.common import store as store_lib

# The settings a worker receives from its launcher (the rest are the launcher's).
_WORKER_SETTINGS = ("num_steps", "num_unlabeled", "num_labeled", "dim", "num_classes", "rounds")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The benchmark's settings (one flag each); the last four are set by the launcher."""
  output_dir: str = "results/bench_multiprocess"
  num_processes: tuple[int, ...] = cli.setting((1, 2), "Process counts to compare.", lower=1)
  devices: int = cli.setting(4, "Devices in all (CPU devices split over processes).", lower=1)
  num_steps: int = cli.setting(256, "Iterations T per timed run.", lower=1)
  num_unlabeled: int = cli.setting(100_000, "Unlabeled points.", lower=1)
  num_labeled: int = cli.setting(200, "Labeled points (S = n_l slots per step).", lower=2)
  dim: int = cli.setting(16, "Features d.", lower=1)
  num_classes: int = cli.setting(3, "k (k - 1 subproblems).", lower=2)
  rounds: int = cli.setting(3, "Timed repetitions (best is reported).", lower=1)
  timeout_s: int = cli.setting(900, "Kill the workers after this many seconds.", lower=1)
  process_id: Optional[int] = cli.setting(None, "Worker mode: this process's id.", lower=0)
  worker_num_processes: int = cli.setting(1, "Worker mode: P.", lower=1)
  port: int = cli.setting(0, "Worker mode: coordinator port on 127.0.0.1.", lower=0)
  result: Optional[str] = cli.setting(None, "Worker mode: JSON file process 0 writes.")


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


def worker(settings):
  """One process: trains and times; process 0 writes the timings."""
  from qsg_jax import distributed   # pylint: disable=g-import-not-at-top
  from qsg_jax import engine        # pylint: disable=g-import-not-at-top
  num_processes = settings.worker_num_processes
  if num_processes > 1:
    distributed.initialize(f"127.0.0.1:{settings.port}", num_processes, settings.process_id)
  mesh = distributed.global_mesh()
  devices, k, t = jax.device_count(), settings.num_classes, settings.num_steps
  n_l, n_u, dim = settings.num_labeled, settings.num_unlabeled, settings.dim
  rng = np.random.default_rng(0)            # the same data in every process
  y = np.concatenate([np.arange(k), rng.integers(0, k, n_l - k)]).astype(np.int32)
  x_l = (rng.random((n_l, dim)) + 0.3 * y[:, None]).astype(np.float32)
  x_u = rng.random((n_u, dim)).astype(np.float32)
  data = engine.TrainData(jnp.asarray(x_l), jnp.asarray(y),
                          engine.shard_unlabeled(x_u, devices))
  config = engine.make_config(k, t, num_shards=devices)
  hyper = engine.Hyperparams(jnp.float32(0.5), jnp.float32(1e-3), jnp.full(k - 1, 0.5),
                             jnp.float32(1.0))
  state = engine.init(jax.random.key(0), data, config, num_unlabeled=n_u)
  train = lambda: engine.train_sharded(state, data, hyper, config, t, mesh)[0].coef
  coef = np.asarray(train())                # compiles
  seed = jax.device_put(jnp.zeros(devices), jax.sharding.NamedSharding(mesh, jax.P("data")))
  comm = lambda: _collectives_only(seed, mesh, t, k, n_l, config.num_frequencies)
  jax.block_until_ready(comm())             # compiles
  train_s = _best_seconds(train, settings.rounds)
  comm_s = _best_seconds(comm, settings.rounds)
  if jax.process_index() == 0:
    floats = 1 + 2 * (k - 1) * n_l + 2 * config.num_frequencies
    with open(settings.result, "w") as f:
      json.dump({"num_processes": num_processes, "devices": devices,
                 "devices_per_process": jax.local_device_count(), "num_steps": t,
                 "ms_per_step": 1e3 * train_s / t, "collective_ms_per_step": 1e3 * comm_s / t,
                 "collective_share": comm_s / train_s, "floats_reduced_per_step": floats,
                 "coef_checksum": float(np.abs(coef).sum())}, f)


def _free_port():
  with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _run_layout(settings, num_processes):
  """Launches ``num_processes`` workers of ``devices / P`` CPU devices; returns process 0's JSON."""
  devices = settings.devices
  if devices % num_processes:
    raise cli.UserError(f"--devices={devices} must be a multiple of each process count; "
                        f"received {num_processes} processes.")
  result = os.path.abspath(os.path.join(settings.output_dir, f"p{num_processes}.json"))
  env = dict(os.environ, JAX_PLATFORMS="cpu",
             XLA_FLAGS=f"--xla_force_host_platform_device_count={devices // num_processes}")
  port = _free_port()
  args = [f"--{name}={getattr(settings, name)}" for name in _WORKER_SETTINGS]
  procs = []
  try:
    for i in range(num_processes):
      procs.append(subprocess.Popen(
          [sys.executable, "-m", "experiments.bench_multiprocess", *args, f"--process_id={i}",
           f"--worker_num_processes={num_processes}", f"--port={port}", f"--result={result}"],
          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for p in procs:
      output, _ = p.communicate(timeout=settings.timeout_s)
      if p.returncode:
        raise RuntimeError(f"worker failed (exit {p.returncode}):\n{output[-3000:]}")
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
        p.communicate()
  with open(result) as f:
    return json.load(f)


def run(settings: Settings, log=cli.log_line):
  """Times every layout of ``num_processes`` (or, as a worker, one process's share)."""
  if settings.process_id is not None:
    return worker(settings)
  store = store_lib.RunStore(settings.output_dir, "bench_multiprocess")
  store.start(settings.as_dict(exclude=cli.RUN_OPTIONS), resume=settings.resume,
              overwrite=settings.overwrite)
  rows = [store.cached(f"p{p}", lambda p=p: _run_layout(settings, p))
          for p in settings.num_processes]
  log(f"T={settings.num_steps} n_u={settings.num_unlabeled} n_l={settings.num_labeled} "
      f"d={settings.dim} k={settings.num_classes} devices={settings.devices} (CPU, gloo over "
      "loopback)")
  log("processes  devices/process  ms/step  collectives ms/step  share  floats reduced/step")
  for r in rows:
    log(f"{r['num_processes']:9d}  {r['devices_per_process']:15d}  {r['ms_per_step']:7.3f}  "
        f"{r['collective_ms_per_step']:19.3f}  {r['collective_share']:5.1%}  "
        f"{r['floats_reduced_per_step']:19d}")
  reporting.atomic_write_json(store.dir / "results.json", rows)   # the rows alone, as before
  store.finish({"rows": rows}, [(None, rows, None)],
               title="Time per step on 1 vs 2 localhost processes")
  return rows


def _define_flags():
  cli.define_flags(Settings)
  flags.DEFINE_alias("out", "output_dir")   # the flag's former name


def main(argv):
  run(cli.settings_from_flags(Settings, argv))


if __name__ == "__main__":
  _define_flags()
  cli.run_main(main)
