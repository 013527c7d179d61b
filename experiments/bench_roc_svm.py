"""Benchmarks of the ROC-SVM, each side measured in one run.

    python -m experiments.bench_roc_svm --bench=kernel --output_dir=results/roc_svm   # Tables 2-3
    python -m experiments.bench_roc_svm --bench=risk --output_dir=results/roc_svm     # Table 1

``--bench=kernel`` times every kernel row of Tables 2-3 (exact Gaussian kernel at 5k and 10k,
Nystrom d = 300 at 5k to 100k, and linear vs radial on Skin, Bank Marketing and Accelerometer)
with its stage breakdown (landmarks = k-means or sampling, design = Nystrom features or kernel
matrix and pairs, train = optimizer), next to the paper's time, for the default L-BFGS and,
with --adamax, for the paper's Adamax on the same data. Each configuration is fitted once to
compile, then timed (median of --repeats); compilation is excluded and reported separately.

``--bench=risk``:

On the paper's linear synthetic model it fits, at each size, the incomplete U-statistic model
(B = n pairs), the full U-statistic streamed over all n+ n- pairs (the paper's baseline, run
where n <= --full_stream_max_n; above, one streamed gradient evaluation is timed and multiplied
by the number of steps the same objective needed), and the full U-statistic evaluated exactly by
sorting. Compilation is excluded from every time (``fit`` reports it separately).
The paper reports 819 s (full) vs 3.0 s (incomplete) at n = 10k, and 10.3 s incomplete at 100k.
Also records the memory refusal for materializing all pairs at the largest size. Writes
bench_roc_svm_kernel.{json,md,csv} or bench_roc_svm.{json,md,csv} into --output_dir.
"""

import dataclasses
import time
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import memory
from qsg_jax.roc_svm import model as model_lib
from qsg_jax.roc_svm import objective as objective_lib
from qsg_jax.roc_svm import pairs as pairs_lib
from qsg_jax.roc_svm import synthetic
from experiments.common import cli
from experiments.common import roc_svm as roc
from experiments.common import store as store_lib

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
                  log=cli.log_line):
  """Times the three ways of fitting at each size; returns (rows, payload).

  Args:
    sizes: training sizes n.
    full_stream_max_n: largest n whose streamed full-U fit actually runs.
    repeats: timed fits per configuration (median reported); compilation is excluded from
      each fit's time (``fit`` compiles ahead of time and reports it separately).
    full_stream_repeats: timed fits of the (slow) streamed full-U model.
    lam, learning_rate, max_steps, tol: ``roc_svm.fit`` settings shared by every fit (the
      paper's Adamax, as in Table 1).
    n_test: test points for the AUC column.
    seed: data seed.
    log: progress callable.
  """
  common = dict(kernel="linear", lam=lam, optimizer="adamax", learning_rate=learning_rate,
                max_steps=max_steps, tol=tol, key=seed)
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
             "fit_settings": dict(common, repeats=repeats, full_stream_max_n=full_stream_max_n,
                              full_stream_repeats=full_stream_repeats)}
  return rows, payload


STAGES = ("landmarks", "design", "train")


def _stage_fit(x, y, repeats, **kwargs):
  """Compiles with one fit, then ``repeats`` timed fits; (last result, median stage seconds)."""
  model_lib.fit(x, y, **kwargs)
  results = [model_lib.fit(x, y, **kwargs) for _ in range(repeats)]
  seconds = {stage: float(np.median([r.seconds[stage] for r in results])) for stage in STAGES}
  seconds["total"] = float(np.median([sum(r.seconds[s] for s in STAGES) for r in results]))
  seconds["compile_first_fit"] = float(results[0].seconds["compile"])
  return results[-1], seconds


def _real_split(name, data_dir, seed, test_fraction=0.3, skin_subsample=100000):
  """First split of Table 3's protocol: stratified 70/30, min-max scaled on the training part."""
  rng = np.random.default_rng(seed)
  return roc.real_split(rng, *roc.load_binary(name, data_dir, rng, skin_subsample),
                        test_fraction)


def kernel_cases(*, table2_sizes=(5000, 10000, 50000, 100000), exact_max_n=10000,
                 exact_extra_sizes=(20000, 50000),
                 datasets=("skin", "bank_marketing", "accelerometer"), data_dir=None, seed=0,
                 n_test=25000):
  """Yields (row label, paper seconds, data thunk, fit kwargs) for the rows of Tables 2-3.

  ``exact_extra_sizes``: exact-kernel rows beyond the paper's (no paper time), tried up to the
  memory limit; a size whose kernel matrix does not fit is recorded as refused.
  """
  for n in exact_extra_sizes:
    def data(n=n):
      key = jax.random.fold_in(jax.random.key(seed), n)
      x, y = synthetic.generate(key, n, "radial")
      x_test, y_test = synthetic.generate(jax.random.fold_in(key, 1), n_test, "radial")
      return (np.asarray(x), np.asarray(y), np.asarray(x_test), np.asarray(y_test), 0.1)
    yield (f"(extra) exact kernel n={n}", float("nan"), data, dict(kernel="gaussian", lam=1e-3))
  for n in table2_sizes:
    def data(n=n):
      key = jax.random.fold_in(jax.random.key(seed), n)
      x, y = synthetic.generate(key, n, "radial")
      x_test, y_test = synthetic.generate(jax.random.fold_in(key, 1), n_test, "radial")
      return (np.asarray(x), np.asarray(y), np.asarray(x_test), np.asarray(y_test), 0.1)
    paper = roc.PAPER_TABLE2[n]
    if n <= exact_max_n:
      yield (f"Table 2 exact kernel n={n}", paper["exact_time"][0], data,
             dict(kernel="gaussian", lam=1e-3))
    yield (f"Table 2 Nystrom d=300 n={n}", paper["nys_time"][0], data,
           dict(kernel="nystrom", lam=1e-3, landmarks="stratified"))
  for name in datasets:
    paper = roc.PAPER_TABLE3[name][3]
    def data(name=name):
      return _real_split(name, data_dir, seed)
    yield (f"Table 3 {name} linear", paper["linear"][0][0], data, dict(kernel="linear", lam=1e-3))
    yield (f"Table 3 {name} radial", paper["radial"][0][0], data,
           dict(kernel="nystrom", lam=1e-3, landmarks="kmeans"))


def run_kernel_benchmark(*, cases, repeats=3, adamax=False, log=cli.log_line):
  """Times each case with the default L-BFGS (and the paper's Adamax when ``adamax``).

  Args:
    cases: iterable of (label, paper seconds, data thunk -> (x, y, x_test, y_test, sigma),
      fit kwargs), e.g. ``kernel_cases()``.
    repeats: timed fits per configuration after one compiling fit (median reported).
    adamax: also time ``optimizer="adamax"`` (the paper's; 2000 steps at most).
    log: progress callable.

  Returns:
    (rows, payload) with one row per case and optimizer.
  """
  rows, cache = [], {}
  for label, paper_seconds, data, kwargs in cases:
    if data not in cache:
      cache.clear()
      cache[data] = data()
    x, y, x_test, y_test, sigma = cache[data]
    optimizers = ("lbfgs", "adamax") if adamax and not label.startswith("(extra)") else ("lbfgs",)
    for optimizer in optimizers:
      # Adamax runs up to 2000 steps: one timed fit (after the compiling one) is enough.
      try:
        kernel_sigma = {} if kwargs["kernel"] == "linear" else {"sigma": sigma}
        result, seconds = _stage_fit(x, y, repeats if optimizer == "lbfgs" else 1,
                                     optimizer=optimizer, key=0, **kernel_sigma, **kwargs)
      except memory.InsufficientMemoryError as e:
        rows.append({"row": label, "optimizer": optimizer, "n_train": x.shape[0],
                     "paper_seconds": paper_seconds,
                     "refused": str(e).split(".")[0].replace("|", "/")})
        log(f"{label} [{optimizer}]: refused: {e}")
        continue
      row = {"row": label, "optimizer": optimizer, "n_train": x.shape[0],
             "paper_seconds": paper_seconds, **seconds, "steps": result.num_steps,
             "converged": result.converged, "objective": result.value,
             "test_auc": model_lib.model_auc(result.model, x_test, y_test),
             "faster_than_paper": bool(seconds["total"] <= paper_seconds), "refused": ""}
      rows.append(row)
      log(f"{label} [{optimizer}]: {seconds['total']:.3f} s (landmarks "
          f"{seconds['landmarks']:.3f}, design {seconds['design']:.3f}, train "
          f"{seconds['train']:.3f}; {result.num_steps} steps) vs paper {paper_seconds} s, "
          f"AUC {row['test_auc']:.4f}")
  ratios = {}
  for row in rows:
    if row["row"].endswith(" radial") and row["optimizer"] == "lbfgs":
      linear = next(r for r in rows if r["row"] == row["row"][:-len("radial")] + "linear"
                    and r["optimizer"] == "lbfgs")
      ratios[row["row"]] = row["total"] / linear["total"]
      log(f"{row['row']}: radial / linear time = {ratios[row['row']]:.1f}x (goal <= 2x)")
  return rows, {"rows": rows, "radial_over_linear": ratios, "repeats": repeats}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The benchmarks' settings (one flag each)."""
  output_dir: str = "results/roc_svm"
  bench: str = cli.setting("kernel", "kernel: Tables 2-3 kernel rows; risk: incomplete vs full U "
                           "(Table 1).", choices=("kernel", "risk"))
  table2_sizes: tuple[int, ...] = cli.setting((5000, 10000, 50000, 100000), "Table 2 sizes.",
                                              lower=2)
  exact_max_n: int = cli.setting(10000, "Largest n of the exact-kernel rows.", lower=0)
  exact_extra_sizes: tuple[int, ...] = cli.setting(
      (20000, 50000), "Exact-kernel sizes beyond the paper's (refused past the memory limit).",
      lower=2)
  datasets: tuple[str, ...] = ("skin", "bank_marketing", "accelerometer")
  data_dir: Optional[str] = None
  adamax: bool = cli.setting(True, "Kernel bench: also time the paper's Adamax.")
  sizes: tuple[int, ...] = cli.setting((10000, 100000), "Training sizes (risk bench).", lower=2)
  full_stream_max_n: int = cli.setting(10000, "Largest n whose streamed full-U fit runs.",
                                       lower=0)
  repeats: int = cli.setting(3, "Timed fits per configuration (median).", lower=1)
  full_stream_repeats: int = cli.setting(1, "Timed fits of the streamed full-U model.", lower=1)
  lam: float = cli.setting(1e-3, "Regularization lambda.", positive=True)
  learning_rate: float = cli.setting(0.05, "Adamax learning rate.", positive=True)
  max_steps: int = cli.setting(2000, "Most full-batch steps.", lower=1)
  tol: float = cli.setting(1e-6, "Relative-change tolerance.", positive=True)
  seed: int = cli.setting(0, "Data seed.")


def run(settings: Settings, log=cli.log_line):
  """Runs ``settings.bench``; writes its table into the output directory; returns the rows."""
  s = settings
  name = "bench_roc_svm_kernel" if s.bench == "kernel" else "bench_roc_svm"
  store = store_lib.RunStore(s.output_dir, name)   # checked before any fit
  store.start(s.as_dict(exclude=cli.RUN_OPTIONS), resume=s.resume, overwrite=s.overwrite)
  if s.bench == "kernel":
    rows, payload = run_kernel_benchmark(
        cases=kernel_cases(table2_sizes=s.table2_sizes, exact_max_n=s.exact_max_n,
                           datasets=s.datasets, exact_extra_sizes=s.exact_extra_sizes,
                           data_dir=s.data_dir, seed=s.seed),
        repeats=s.repeats, adamax=s.adamax, log=log)
    title = "ROC-SVM kernel fits: ours vs the paper's time"
  else:
    rows, payload = run_benchmark(sizes=s.sizes, full_stream_max_n=s.full_stream_max_n,
                                  repeats=s.repeats, full_stream_repeats=s.full_stream_repeats,
                                  lam=s.lam, learning_rate=s.learning_rate,
                                  max_steps=s.max_steps, tol=s.tol, seed=s.seed, log=log)
    title = "Incomplete vs full U-statistic ROC-SVM training time"
  paths = store.finish(payload, [(None, rows, None)], title=title)
  log(paths["md"].read_text())
  return rows


if __name__ == "__main__":
  cli.script(Settings, run)
