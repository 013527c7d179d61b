r"""Online pairwise least squares speed: literal O(t d) vs incremental O(d^2) steps; 1e6 steps.

  python -m experiments.bench_online_pairwise --output_dir=results/online_pairwise

Both forms are brought to t = --at_step examples, then timed side by side in this run over the
next --measure_steps examples (best of --repeats jitted scans, compilation excluded); the ratio
is literal / incremental time per step. Then the incremental form processes --stream_steps
examples of dimension --dim: once as a single scan over data already in memory, once through
``fit_stream`` with chunks generated on the device (the streaming path, checks included).
Writes bench_online_pairwise.{json,md,csv} into --output_dir.
"""

import dataclasses
import functools
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import online_pairwise as op
from experiments.common import cli
from experiments.common import store as store_lib

_scan = jax.jit(op.run, static_argnames=("step_size", "metrics_fn"))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The benchmark's settings (one flag each)."""
  output_dir: str = "results/online_pairwise"
  dim: int = cli.setting(20, "Features d.", lower=1)
  at_step: int = cli.setting(10**4, "t at which the per-step time is measured.", lower=1)
  measure_steps: int = cli.setting(1000, "Steps timed after at_step.", lower=1)
  stream_steps: int = cli.setting(10**6, "Examples of the incremental end-to-end run.", lower=1)
  chunk_size: int = cli.setting(10**4, "Examples per streamed chunk.", lower=1)
  repeats: int = cli.setting(5, "Timed repetitions (the best is kept).", lower=1)
  seed: int = cli.setting(0, "Seed of the synthetic stream.")


def _best_time(fn, repeats):
  """Best wall time of ``repeats`` calls of fn() (each result blocked on)."""
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn())
    times.append(time.perf_counter() - start)
  return min(times)


def benchmark(*, dim=20, at_step=10**4, measure_steps=1000, stream_steps=10**6,
              chunk_size=10**4, repeats=5, seed=0):
  """Times both forms at t = at_step and the incremental form over stream_steps examples."""
  problem = op.make_linear_problem(seed, dim, dim, noise=1.0)
  step_size = op.polynomial_step_size(0.75, problem.mu)
  key = jax.random.key(seed)
  total = at_step + measure_steps
  x, y = op.sample_linear(problem, key, total)
  head = (x[:at_step], y[:at_step])
  tail = (x[at_step:], y[at_step:])

  forms = {"literal": op.init_literal(dim, total), "incremental": op.init(dim)}
  per_step, final_w = {}, {}
  for name, state in forms.items():
    state, _ = _scan(state, *head, step_size)                 # now at t = at_step
    jax.block_until_ready(_scan(state, *tail, step_size))     # compile the timed shape
    seconds = _best_time(lambda state=state: _scan(state, *tail, step_size), repeats)
    per_step[name] = seconds / measure_steps
    final_w[name] = np.asarray(_scan(state, *tail, step_size)[0].w)
  ratio = per_step["literal"] / per_step["incremental"]
  agreement = float(np.max(np.abs(final_w["literal"] - final_w["incremental"])) /
                    np.max(np.abs(final_w["literal"])))

  # 10^6 examples, data in memory: one scan.
  x_all, y_all = jax.block_until_ready(op.sample_linear(problem, jax.random.fold_in(key, 1),
                                                        stream_steps))
  jax.block_until_ready(_scan(op.init(dim), x_all, y_all, step_size))
  scan_seconds = _best_time(lambda: _scan(op.init(dim), x_all, y_all, step_size), repeats=2)
  del x_all, y_all
  # 10^6 examples streamed: chunks generated on the device, checked, scanned one by one.
  sample = functools.partial(op.sample_linear, problem, num=chunk_size)
  chunks = lambda i: sample(jax.random.fold_in(key, 2 + i))
  num_chunks = -(-stream_steps // chunk_size)
  op.fit_stream(chunks, num_chunks=1, step_size=step_size)  # compile
  start = time.perf_counter()
  result = op.fit_stream(chunks, num_chunks=num_chunks, step_size=step_size)
  jax.block_until_ready(result.state.w)
  stream_seconds = time.perf_counter() - start
  error = float(jnp.sum((result.state.w - problem.w_star) ** 2))
  return {
      "dim": dim, "at_step": at_step, "measure_steps": measure_steps,
      "literal_us_per_step": per_step["literal"] * 1e6,
      "incremental_us_per_step": per_step["incremental"] * 1e6,
      "ratio_literal_over_incremental": ratio,
      "relative_difference_of_w": agreement,
      "stream_steps": stream_steps, "chunk_size": chunk_size,
      "scan_seconds": scan_seconds, "stream_seconds": stream_seconds,
      "stream_sq_error_to_w_star": error,
      "device": str(jax.devices()[0].device_kind), "cpu_count": os.cpu_count()}


def run(settings: Settings, log=cli.log_line):
  """Runs the benchmark, prints it, writes it into the output directory; returns the record."""
  store = store_lib.RunStore(settings.output_dir, "bench_online_pairwise")
  store.start(settings.as_dict(exclude=cli.RUN_OPTIONS), resume=settings.resume,
              overwrite=settings.overwrite)
  res = benchmark(**settings.as_dict(exclude=cli.RUN_OPTIONS))
  log(f"device: {res['device']} ({res['cpu_count']} CPU cores visible), d = {res['dim']}")
  log(f"time per step at t = {res['at_step']} (best of jitted scans over "
      f"{res['measure_steps']} steps):")
  log(f"  literal O(t d):      {res['literal_us_per_step']:10.2f} us")
  log(f"  incremental O(d^2):  {res['incremental_us_per_step']:10.2f} us")
  log(f"  ratio literal / incremental: {res['ratio_literal_over_incremental']:.1f}x "
      f"(iterates agree to {res['relative_difference_of_w']:.1e} relative, float32)")
  log(f"incremental form, {res['stream_steps']} examples: {res['scan_seconds']:.2f} s as one "
      f"scan over data in memory, {res['stream_seconds']:.2f} s streamed in chunks of "
      f"{res['chunk_size']} generated on the device (||w - w*||^2 = "
      f"{res['stream_sq_error_to_w_star']:.2e})")
  rows = [{"form": "literal", "us_per_step_at_t": res["literal_us_per_step"]},
          {"form": "incremental", "us_per_step_at_t": res["incremental_us_per_step"]},
          {"form": "ratio", "us_per_step_at_t": res["ratio_literal_over_incremental"]}]
  paths = store.finish(res, [(None, rows, None)],
                       title=f"Online pairwise LS, d={res['dim']}, time per step at "
                             f"t={res['at_step']} ({res['device']})")
  log(f"wrote {paths['json']}")
  return res


def run_all(**settings):
  """``run(Settings(**settings))`` (the keyword form tests/test_online_pairwise.py calls)."""
  return run(Settings(**settings))


if __name__ == "__main__":
  cli.script(Settings, run)
