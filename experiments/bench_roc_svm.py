"""Benchmark: incomplete-U vs full-U ROC-SVM training time, measured side by side in one run.

    python -m experiments.bench_roc_svm --output_dir=results/roc_svm

On the paper's linear synthetic model it fits, at each size, the incomplete U-statistic model
(B = n pairs), the full U-statistic streamed over all n+ n- pairs (the paper's baseline, run
where n <= --full_stream_max_n; above, one streamed gradient evaluation is timed and multiplied
by the number of steps the same objective needed), and the full U-statistic evaluated exactly by
sorting. Compilation is excluded from every time (``fit`` reports it separately).
The paper reports 819 s (full) vs 3.0 s (incomplete) at n = 10k, and 10.3 s incomplete at 100k.
Also records the memory refusal for materializing all pairs at the largest size.
"""

import time

from absl import app
from absl import flags
import jax
import jax.numpy as jnp
import numpy as np

from experiments import reporting
from qsg_jax import memory
from qsg_jax.roc_svm import model as model_lib
from qsg_jax.roc_svm import objective as objective_lib
from qsg_jax.roc_svm import pairs as pairs_lib
from qsg_jax.roc_svm import synthetic

PAPER_SECONDS = {("incomplete", 10000): 3.02, ("full", 10000): 819.10,
                 ("incomplete", 100000): 10.26}


def _data(seed, n):
  x, y = synthetic.generate(jax.random.fold_in(jax.random.key(seed), n), n, "linear")
  return np.asarray(x), np.asarray(y)


def _timed_fits(x, y, repeats, **kwargs):
  """Fits ``repeats`` times; (last result, median wall seconds excluding XLA compilation)."""
  times, result = [], None
  for _ in range(repeats):
    start = time.perf_counter()
    result = model_lib.fit(x, y, **kwargs)
    times.append(time.perf_counter() - start - result.seconds["compile"])
  return result, float(np.median(times))


def _stream_step_seconds(x, y, loss, pairs_per_block, repeats=2):
  """Seconds of one jitted value-and-gradient of the streamed full-U objective."""
  positive = y > 0
  no_pairs = pairs_lib.PairIndices(jnp.zeros(1, jnp.int32), jnp.zeros(1, jnp.int32))
  data = pairs_lib.make_pair_data(x[positive], x[~positive], no_pairs)
  objective = objective_lib.Objective(loss, "full", "linear", pairs_per_block)
  step = jax.jit(jax.value_and_grad(objective))
  beta = jnp.ones((x.shape[1],), jnp.float32)
  jax.block_until_ready(step(beta, data, 1e-3))
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(step(beta, data, 1e-3))
    times.append(time.perf_counter() - start)
  return float(np.median(times))


def run_benchmark(*, sizes=(10000, 100000), full_stream_max_n=10000, repeats=3,
                  full_stream_repeats=1, lam=1e-3,
                  learning_rate=0.05, max_steps=2000, tol=1e-6, n_test=25000, seed=0,
                  log=print):
  """Times the three ways of fitting at each size; returns (rows, payload).

  Args:
    sizes: training sizes n.
    full_stream_max_n: largest n whose streamed full-U fit actually runs.
    repeats: timed fits per configuration (median reported); compilation is excluded from
      each fit's time (``fit`` compiles ahead of time and reports it separately).
    full_stream_repeats: timed fits of the (slow) streamed full-U model.
    lam, learning_rate, max_steps, tol: ``roc_svm.fit`` settings shared by every fit.
    n_test: test points for the AUC column.
    seed: data seed.
    log: progress callable.
  """
  common = dict(kernel="linear", lam=lam, learning_rate=learning_rate, max_steps=max_steps,
                tol=tol, key=seed)
  x_test, y_test = synthetic.generate(jax.random.key(seed + 1), n_test, "linear")
  rows = []
  for n in sizes:
    x, y = _data(seed, n)
    for risk in ("incomplete", "full_sorted", "full"):
      row = {"n_train": n, "risk": risk}
      if risk == "full" and n > full_stream_max_n:
        per_step = _stream_step_seconds(x, y, "hinge", objective_lib.DEFAULT_PAIRS_PER_BLOCK)
        steps = next(r["steps"] for r in rows if r["n_train"] == n and r["risk"] == "full_sorted")
        row.update(seconds=float("nan"), steps=steps, seconds_per_step=per_step,
                   projected_seconds=per_step * steps, auc=float("nan"), measured="projected")
      else:
        result, seconds = _timed_fits(x, y, full_stream_repeats if risk == "full" else repeats,
                                      risk=risk, **common)
        row.update(seconds=seconds, steps=result.num_steps,
                   seconds_per_step=result.seconds["train"] / max(result.num_steps, 1),
                   projected_seconds=seconds,
                   auc=model_lib.model_auc(result.model, np.asarray(x_test), y_test),
                   measured="fit")
      row["paper_seconds"] = PAPER_SECONDS.get(("full" if risk == "full" else risk, n),
                                               float("nan"))
      rows.append(row)
      log(f"n={n} {risk}: {row['projected_seconds']:.3f} s ({row['measured']}), "
          f"{row['steps']} steps, {row['seconds_per_step'] * 1e3:.2f} ms/step, "
          f"AUC {row['auc']:.4f}")
  ratios = {}
  for n in sizes:
    by = {r["risk"]: r for r in rows if r["n_train"] == n}
    ratios[n] = {"full_over_incomplete": by["full"]["projected_seconds"]
                                         / by["incomplete"]["seconds"],
                 "sorted_over_incomplete": by["full_sorted"]["seconds"]
                                           / by["incomplete"]["seconds"]}
    log(f"n={n}: full (streamed) / incomplete = {ratios[n]['full_over_incomplete']:.1f}x, "
        f"full (sorted) / incomplete = {ratios[n]['sorted_over_incomplete']:.1f}x "
        f"(paper at 10k: {819.10 / 3.02:.0f}x)")
  n = max(sizes)
  n_pos = int(_data(seed, n)[1].sum())
  try:
    objective_lib.check_pair_block(n_pos, n - n_pos, None)
    refusal = "allowed: all pairs fit in memory"
  except memory.InsufficientMemoryError as e:
    refusal = str(e)
  log(f"materializing all pairs at n={n}: {refusal}")
  payload = {"rows": rows, "ratios": ratios, "materialize_all_pairs": refusal,
             "settings": dict(common, repeats=repeats, full_stream_max_n=full_stream_max_n,
                              full_stream_repeats=full_stream_repeats)}
  return rows, payload


FLAGS = flags.FLAGS


def _define_flags():
  """Flags are defined only when run as a script, so tests can import this module freely."""
  flags.DEFINE_string("output_dir", "results/roc_svm", "Where to write the results.")
  flags.DEFINE_list("sizes", ["10000", "100000"], "Training sizes.")
  flags.DEFINE_integer("full_stream_max_n", 10000, "Largest n whose streamed full-U fit runs.")
  flags.DEFINE_integer("repeats", 3, "Timed fits per configuration (median).")
  flags.DEFINE_integer("full_stream_repeats", 1, "Timed fits of the streamed full-U model.")
  flags.DEFINE_float("lam", 1e-3, "Regularization lambda.")
  flags.DEFINE_float("learning_rate", 0.05, "Adamax learning rate.")
  flags.DEFINE_integer("max_steps", 2000, "Most full-batch steps.")
  flags.DEFINE_float("tol", 1e-6, "Relative-change tolerance.")
  flags.DEFINE_integer("seed", 0, "Data seed.")


def main(argv):
  del argv
  rows, payload = run_benchmark(sizes=[int(s) for s in FLAGS.sizes],
                                full_stream_max_n=FLAGS.full_stream_max_n,
                                repeats=FLAGS.repeats,
                                full_stream_repeats=FLAGS.full_stream_repeats, lam=FLAGS.lam,
                                learning_rate=FLAGS.learning_rate, max_steps=FLAGS.max_steps,
                                tol=FLAGS.tol, seed=FLAGS.seed)
  paths = reporting.write_results(FLAGS.output_dir, "bench_roc_svm", payload, rows,
                                  title="Incomplete vs full U-statistic ROC-SVM training time")
  print(open(paths["md"]).read())


if __name__ == "__main__":
  _define_flags()
  app.run(main)
