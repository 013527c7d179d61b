"""Reproduces Tables 1-3 of the incomplete-U ROC-SVM paper (Bae and Shin) with our numbers beside.

    python -m experiments.roc_svm_tables --table=1 --repetitions=50 --output_dir=results/roc_svm
    python -m experiments.roc_svm_tables --table=2 --repetitions=50
    QSG_JAX_DATA=../shared/data python -m experiments.roc_svm_tables --table=3 --splits=30

Table 1: linear synthetic model, full vs incomplete U-statistic (time and test AUC).
Table 2: radial synthetic model, incomplete U with the exact Gaussian kernel vs Nystrom (d = 300).
Table 3: Skin (100k subsample), Bank Marketing, Accelerometer; linear vs Nystrom radial. The
paper's numbers and the writing are in ``common.roc_svm``.

Times are wall-clock seconds of building the design (Nystrom features, kernel matrix, pairs) plus
the optimization, excluding XLA compilation (reported separately in the JSON). AUC in percent,
mean (standard error) over repetitions. Each table's markdown ends with the population AUC of our
generator and whether the paper's claims hold on our numbers. Each repetition (Table 3: each
split and kernel) is written at once to --output_dir/cells/roc_svm_tables/; ``--resume``
continues an interrupted run from them.
"""

import dataclasses
from typing import Optional

import jax
import numpy as np

from qsg_jax import data as data_lib
from qsg_jax.roc_svm import synthetic
from experiments.common import cli
from experiments.common import roc_svm as roc
from experiments.common import store as store_lib

GENERATORS = ("as_written", "paper_auc")
# Seed offsets of the streams of a run seeded s: Table 3's dataset i draws its splits from
# default_rng(s + TABLE3_DATASET_STRIDE * i); the population AUC from key(s + POPULATION_SEED).
TABLE3_DATASET_STRIDE = 1000
POPULATION_SEED = 7919


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The tables' settings (one flag each)."""
  table: tuple[int, ...] = cli.setting((1, 2, 3), "Which tables to run (1, 2, 3).", lower=1,
                                       upper=3, nonempty=True)
  output_dir: str = "results/roc_svm"
  repetitions: int = cli.setting(50, "Repetitions per size (Tables 1-2; paper: 50).", lower=1)
  sizes: tuple[int, ...] = cli.setting((5000, 10000, 50000, 100000), "Training sizes (Tables "
                                       "1-2).", lower=2)
  n_test: int = cli.setting(25000, "Test points per repetition (Tables 1-2).", lower=2)
  lam_grid: tuple[float, ...] = cli.setting((1e-4, 1e-3, 1e-2, 1e-1), "Lambdas for "
                                            "cross-validation.", positive=True)
  sigma_grid: tuple[float, ...] = cli.setting((0.1, 0.5), "Sigmas for cross-validation "
                                              "(Table 2).", positive=True)
  sigma_factors: tuple[float, ...] = cli.setting((0.5, 1.0, 2.0), "Table 3 sigma grid, "
                                                 "multiples of the median heuristic.",
                                                 positive=True)
  cv_folds: int = cli.setting(5, "Cross-validation folds.", lower=2)
  cv: str = cli.setting("first", "Select on the first repetition or each.",
                        choices=("first", "each"))
  full_stream_max_n: int = cli.setting(10000, "Largest n for the streamed full-U model.",
                                       lower=0)
  full_sorted: bool = cli.setting(True, "Also fit the full U by the exact sorted evaluation.")
  exact_kernel_max_n: int = cli.setting(10000, "Largest n for the exact kernel (Table 2).",
                                        lower=0)
  num_landmarks: int = cli.setting(300, "Nystrom landmarks d.", lower=1)
  population_samples: int = cli.setting(4_000_000, "Monte Carlo size of the population AUC.",
                                        lower=2)
  splits: int = cli.setting(30, "Random splits per dataset (Table 3).", lower=1)
  test_fraction: float = cli.setting(0.3, "Held-out share per split (Table 3).", positive=True,
                                     upper=1.0)
  skin_subsample: int = cli.setting(100000, "Skin subsample size (Table 3).", lower=0)
  datasets: tuple[str, ...] = ("skin", "bank_marketing", "accelerometer")
  data_dir: Optional[str] = None
  generator: str = cli.setting(
      "as_written", "Tables 1-2 data: 80 % negatives as written, or the share of negatives "
      "that reproduces the paper's population AUC (linear 76.3 %, radial 56.3 %).",
      choices=GENERATORS)
  optimizer: str = cli.setting("lbfgs", "lbfgs (default, fast) or adamax (the paper's "
                               "optimizer).", choices=("lbfgs", "adamax"))
  learning_rate: Optional[float] = cli.setting(None, "Adamax learning rate (--optimizer=adamax "
                                               "only).", positive=True)
  max_steps: int = cli.setting(2000, "Most full-batch steps per fit.", lower=1)
  tol: float = cli.setting(1e-6, "Relative-change tolerance of the stopping rule.",
                           positive=True)
  seed: int = cli.setting(0, "Base seed.")


def negative_fraction(model, generator):
  """Share of negatives of the synthetic model: 0.8 as the paper writes, or the share that
  reproduces the paper's population AUC (``synthetic.PAPER_AUC_NEGATIVE_FRACTION``)."""
  if generator not in GENERATORS:
    raise ValueError(f"generator must be one of {GENERATORS}; received {generator!r}.")
  return 0.8 if generator == "as_written" else synthetic.PAPER_AUC_NEGATIVE_FRACTION[model]


def _synthetic_split(seed, model, n_train, n_test, rep, generator="as_written"):
  key = jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), n_train), rep)
  key_train, key_test = jax.random.split(key)
  fraction = negative_fraction(model, generator)
  x, y = synthetic.generate(key_train, n_train, model, fraction)
  x_test, y_test = synthetic.generate(key_test, n_test, model, fraction)
  return np.asarray(x), np.asarray(y), np.asarray(x_test), np.asarray(y_test)


def _population(seed, model, num_samples, generator="as_written"):
  mean, se = synthetic.population_auc(jax.random.key(seed + POPULATION_SEED), model, num_samples,
                                      negative_fraction(model, generator))
  return 100.0 * mean, 100.0 * se


def _table_row(n, rec, paper, ours, papers):
  """One row of Table 1 or 2: ours ((title, key, digits): mean (se) of ``rec[key]``) beside the
  paper's (``paper[key]``)."""
  return {"n_train": f"{n:,}", **{t: roc.cell(roc.summary(rec[k]), d) for t, k, d in ours},
          **{t: roc.cell(paper.get(k), d) for t, k, d in papers}}


def _record(rec, out):
  """Appends one repetition's values to the lists of ``rec``; returns its parameters."""
  for name, value in out.items():
    if name == "cv":
      rec.setdefault("cv", []).append(value)
    elif name != "params":
      rec[name].append(value)
  return out["params"]


def run_table1(*, sizes=(5000, 10000, 50000, 100000), repetitions=50, n_test=25000,
               lam_grid=(1e-4, 1e-3, 1e-2, 1e-1), cv_folds=5, cv="first",
               full_stream_max_n=10000, full_sorted=True, population_samples=4_000_000,
               generator="as_written", seed=0, fit_kwargs=None, log=cli.log_line, store=None):
  """Table 1: linear model, full vs incomplete U-statistic.

  Args:
    sizes: training sizes n.
    repetitions: independent data sets per size.
    n_test: test points per repetition.
    lam_grid: lambdas compared by cross-validation (of the incomplete model).
    cv_folds: folds of the cross-validation.
    cv: "first" (select lambda on repetition 0, reuse it) or "each" repetition.
    full_stream_max_n: largest n at which the streamed full-U model (the paper's baseline
      computation, O(n+ n-) per step) runs; above it the cell is "-".
    full_sorted: also fit the full U-statistic by the exact O(n log n) sorted evaluation.
    population_samples: Monte Carlo sample size of the population AUC.
    generator: "as_written" (80 % negatives, the paper's text) or "paper_auc" (the share of
      negatives whose population AUC is the paper's; see ``synthetic``).
    seed: base seed.
    fit_kwargs: extra ``roc_svm.fit`` arguments shared by all fits (learning_rate, tol, ...).
    log: callable for progress lines.
    store: a started ``store_lib.RunStore``: each repetition is written to it at once and
      taken from it on a resumed run (None: nothing stored).

  Returns:
    (rows for the markdown table, JSON payload).
  """
  fit_kwargs = dict(fit_kwargs or {})
  grid = [{"lam": float(lam)} for lam in lam_grid]
  population = _population(seed, "linear", population_samples, generator)
  rows, raw, checks = [], {}, []
  for n in sizes:
    rec = {k: [] for k in ("inc_time", "inc_auc", "full_time", "full_auc", "sorted_time",
                           "sorted_auc", "inc_steps", "full_steps", "compile_s")}
    params = None
    for rep in range(repetitions):
      def one_rep(rep=rep, params=params):
        x, y, x_test, y_test = _synthetic_split(seed, "linear", n, n_test, rep, generator)
        out = {}
        if params is None or cv == "each":
          params, cv_auc = roc.select(x, y, grid, cv_folds, seed + rep, kernel="linear",
                                         **fit_kwargs)
          out["cv"] = {"best": params, "mean_auc": cv_auc}
        out["params"] = params
        common = dict(kernel="linear", key=seed + rep, **fit_kwargs, **params)
        result, seconds, total = roc.timed_fit(x, y, risk="incomplete", **common)
        out.update(inc_time=seconds, inc_auc=roc.auc_percent(result, x_test, y_test),
                   inc_steps=result.num_steps, compile_s=total - seconds)
        if n <= full_stream_max_n:
          result, seconds, _ = roc.timed_fit(x, y, risk="full", **common)
          out.update(full_time=seconds, full_auc=roc.auc_percent(result, x_test, y_test),
                     full_steps=result.num_steps)
        if full_sorted:
          result, seconds, _ = roc.timed_fit(x, y, risk="full_sorted", **common)
          out.update(sorted_time=seconds, sorted_auc=roc.auc_percent(result, x_test, y_test))
        return out

      params = _record(rec, store_lib.cached(store, f"table1-n{n}-rep{rep}", one_rep))
      log(f"table1 n={n} rep={rep} lam={params['lam']:g} inc_auc={rec['inc_auc'][-1]:.3f} "
          f"inc_s={rec['inc_time'][-1]:.3f}"
          + (f" full_auc={rec['full_auc'][-1]:.3f} full_s={rec['full_time'][-1]:.2f}"
             if rec["full_auc"] else "")
          + (f" sorted_auc={rec['sorted_auc'][-1]:.3f} sorted_s={rec['sorted_time'][-1]:.2f}"
             if rec["sorted_auc"] else ""))
    raw[n] = rec
    rows.append(_table_row(n, rec, roc.PAPER_TABLE1.get(n, {}), (
        ("Full time (streamed)", "full_time", 2), ("Full time (sorted)", "sorted_time", 2),
        ("Incomplete time", "inc_time", 3), ("Full AUC (streamed)", "full_auc", 3),
        ("Full AUC (sorted)", "sorted_auc", 3), ("Incomplete AUC", "inc_auc", 3)), (
            ("paper Full time", "full_time", 2), ("paper Incomplete time", "inc_time", 2),
            ("paper Full AUC", "full_auc", 3), ("paper Incomplete AUC", "inc_auc", 3))))
    inc = np.mean(rec["inc_auc"])
    for name, how in (("full_auc", "streamed"), ("sorted_auc", "sorted")):
      if rec[name]:
        gap = abs(np.mean(rec[name]) - inc) / 100.0
        checks.append({"check": f"|AUC full ({how}) - AUC incomplete| <= 0.005",
                       "n_train": n, "value": gap, "pass": bool(gap <= 0.005)})
    if n == 100000:
      gap = abs(inc - population[0]) / 100.0
      checks.append({"check": "|AUC incomplete - population AUC| <= 0.01 at n = 100k",
                     "n_train": n, "value": gap, "pass": bool(gap <= 0.01)})
  payload = {"table": 1, "population_auc_percent": population, "generator": generator,
             "paper_population_auc_percent": roc.PAPER_POPULATION_AUC["linear"],
             "repetitions": repetitions, "n_test": n_test, "lam_grid": list(lam_grid),
             "cv": cv, "cv_folds": cv_folds, "fit_kwargs": fit_kwargs,
             "full_stream_max_n": full_stream_max_n, "raw": raw, "checks": checks}
  return rows, payload


def run_table2(*, sizes=(5000, 10000, 50000, 100000), repetitions=50, n_test=25000,
               lam_grid=(1e-4, 1e-3, 1e-2), sigma_grid=(0.1, 0.5), cv_folds=5, cv="first",
               exact_kernel_max_n=10000, num_landmarks=300, landmarks="stratified",
               population_samples=4_000_000, generator="as_written", seed=0, fit_kwargs=None,
               log=cli.log_line, store=None):
  """Table 2: radial model, incomplete U with the exact Gaussian kernel vs Nystrom features.

  Args:
    sizes, repetitions, n_test, cv_folds, cv, population_samples, generator, seed, log, store:
      as in ``run_table1``.
    lam_grid, sigma_grid: the (lambda, sigma) grid compared by cross-validation of the Nystrom
      model; the exact kernel model uses the selected values too.
    exact_kernel_max_n: largest n for the exact kernel (n x n kernel matrix); above: "-".
    num_landmarks: d (paper: 300).
    landmarks: landmark selection (paper's simulations: stratified).
    fit_kwargs: extra ``roc_svm.fit`` arguments shared by all fits.

  Returns:
    (rows, payload).
  """
  fit_kwargs = dict(fit_kwargs or {})
  grid = [{"lam": float(lam), "sigma": float(s)} for s in sigma_grid for lam in lam_grid]
  nystrom = dict(kernel="nystrom", num_landmarks=num_landmarks, landmarks=landmarks)
  population = _population(seed, "radial", population_samples, generator)
  rows, raw, checks = [], {}, []
  for n in sizes:
    rec = {k: [] for k in ("exact_time", "exact_auc", "nys_time", "nys_auc", "exact_steps",
                           "nys_steps")}
    params = None
    for rep in range(repetitions):
      def one_rep(rep=rep, params=params):
        x, y, x_test, y_test = _synthetic_split(seed, "radial", n, n_test, rep, generator)
        out = {}
        if params is None or cv == "each":
          params, cv_auc = roc.select(x, y, grid, cv_folds, seed + rep, **nystrom,
                                         **fit_kwargs)
          out["cv"] = {"best": params, "mean_auc": cv_auc}
        out["params"] = params
        common = dict(key=seed + rep, risk="incomplete", **fit_kwargs, **params)
        result, seconds, _ = roc.timed_fit(x, y, **nystrom, **common)
        out.update(nys_time=seconds, nys_auc=roc.auc_percent(result, x_test, y_test),
                   nys_steps=result.num_steps)
        if n <= exact_kernel_max_n:
          result, seconds, _ = roc.timed_fit(x, y, kernel="gaussian", **common)
          out.update(exact_time=seconds, exact_auc=roc.auc_percent(result, x_test, y_test),
                     exact_steps=result.num_steps)
        return out

      params = _record(rec, store_lib.cached(store, f"table2-n{n}-rep{rep}", one_rep))
      log(f"table2 n={n} rep={rep} params={params} nys_auc={rec['nys_auc'][-1]:.3f} "
          f"nys_s={rec['nys_time'][-1]:.2f}"
          + (f" exact_auc={rec['exact_auc'][-1]:.3f} exact_s={rec['exact_time'][-1]:.2f}"
             if rec["exact_auc"] else ""))
    raw[n] = rec
    rows.append(_table_row(n, rec, roc.PAPER_TABLE2.get(n, {}), (
        ("Without Nystrom time", "exact_time", 2), ("Nystrom time", "nys_time", 2),
        ("Without Nystrom AUC", "exact_auc", 3), ("Nystrom AUC", "nys_auc", 3)), (
            ("paper Without time", "exact_time", 2), ("paper Nystrom time", "nys_time", 2),
            ("paper Without AUC", "exact_auc", 3), ("paper Nystrom AUC", "nys_auc", 3))))
    if rec["exact_auc"]:
      loss = (np.mean(rec["exact_auc"]) - np.mean(rec["nys_auc"])) / 100.0
      checks.append({"check": "AUC exact kernel - AUC Nystrom (d = 300) < 0.01",
                     "n_train": n, "value": loss, "pass": bool(loss < 0.01)})
  payload = {"table": 2, "population_auc_percent": population, "generator": generator,
             "paper_population_auc_percent": roc.PAPER_POPULATION_AUC["radial"],
             "repetitions": repetitions, "n_test": n_test, "grid": grid, "cv": cv,
             "cv_folds": cv_folds, "num_landmarks": num_landmarks, "landmarks": landmarks,
             "fit_kwargs": fit_kwargs, "exact_kernel_max_n": exact_kernel_max_n, "raw": raw,
             "checks": checks}
  return rows, payload


def run_table3(*, datasets=("skin", "bank_marketing", "accelerometer"), splits=30,
               test_fraction=0.3, skin_subsample=100000, lam_grid=(1e-4, 1e-3, 1e-2, 1e-1),
               sigma_factors=(0.5, 1.0, 2.0), cv_folds=5, cv="first", num_landmarks=300,
               landmarks="kmeans", data_dir=None, loader=data_lib.load, seed=0, fit_kwargs=None,
               log=cli.log_line, store=None):
  """Table 3: real data, linear vs radial (Nystrom, d landmarks), incomplete U-statistic.

  Args:
    datasets: names for ``qsg_jax.data.load``.
    splits: random stratified train/test splits per dataset (paper: 30).
    test_fraction: share of each split held out for the test AUC (the paper does not say).
    skin_subsample: Skin is subsampled once to this many points, stratified (paper: 100,000).
    lam_grid: lambdas compared by cross-validation.
    sigma_factors: sigma grid of the radial model, as multiples of 1 / median squared distance
      of the min-max scaled training points.
    cv_folds, cv, seed, log, store: as in ``run_table1``.
    num_landmarks: d (paper: 300).
    landmarks: landmark selection (paper's real data: k-means).
    data_dir: data directory (default: $QSG_JAX_DATA).
    loader: callable(name, data_dir=...) -> dataset with ``x``, ``y``; default
      ``qsg_jax.data.load``.
    fit_kwargs: extra ``roc_svm.fit`` arguments shared by all fits.

  Returns:
    (rows, payload).
  """
  fit_kwargs = dict(fit_kwargs or {})
  rows, raw, checks = [], {}, []
  for d_index, name in enumerate(datasets):
    rng = np.random.default_rng(seed + TABLE3_DATASET_STRIDE * d_index)
    x_all, y_all = roc.load_binary(name, data_dir, rng, skin_subsample, loader)
    rec = {kernel: {"time": [], "auc": [], "params": []} for kernel in ("linear", "radial")}
    chosen = {}
    for split in range(splits):
      x_train, y_train, x_test, y_test, sigma0 = roc.real_split(rng, x_all, y_all,
                                                                   test_fraction)
      specs = {
          "linear": ({}, [{"lam": float(lam)} for lam in lam_grid]),
          "radial": (dict(kernel="nystrom", num_landmarks=num_landmarks, landmarks=landmarks),
                     [{"lam": float(lam), "sigma": float(f * sigma0)}
                      for f in sigma_factors for lam in lam_grid]),
      }
      for kernel, (extra, grid) in specs.items():
        def fit_kernel(kernel=kernel, extra=extra, grid=grid, params=chosen.get(kernel),
                       x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test):
          out = {}
          if params is None or cv == "each":
            params, cv_auc = roc.select(x_train, y_train, grid, cv_folds, seed + split,
                                           **extra, **fit_kwargs)
            out["cv"] = {"best": params, "mean_auc": cv_auc}
          result, seconds, _ = roc.timed_fit(x_train, y_train, key=seed + split, **extra,
                                                **fit_kwargs, **params)
          out.update(params=params, time=seconds, auc=roc.auc_percent(result, x_test, y_test))
          return out

        # The split's random draws above are replayed on a resumed run; only the fits are stored.
        out = store_lib.cached(store, f"table3-{name}-split{split}-{kernel}", fit_kernel)
        chosen[kernel] = out["params"]
        if "cv" in out:
          rec[kernel].setdefault("cv", []).append(out["cv"])
        for field in ("time", "auc", "params"):
          rec[kernel][field].append(out[field])
      log(f"table3 {name} split={split} linear_auc={rec['linear']['auc'][-1]:.2f} "
          f"radial_auc={rec['radial']['auc'][-1]:.2f} linear_s={rec['linear']['time'][-1]:.2f} "
          f"radial_s={rec['radial']['time'][-1]:.2f}")
    raw[name] = rec
    paper_n, paper_p, paper_pos, paper = roc.PAPER_TABLE3.get(name, (None, None, None, {}))
    for kernel in ("linear", "radial"):
      paper_time, paper_auc = paper.get(kernel, (None, None))
      rows.append({
          "Dataset": roc.DATASET_TITLES.get(name, name) if kernel == "linear" else "",
          "n": f"{y_all.size:,}" if kernel == "linear" else "",
          "p": str(x_all.shape[1]) if kernel == "linear" else "",
          "n+/n (%)": f"{100 * y_all.mean():.1f}" if kernel == "linear" else "",
          "Kernel": kernel.capitalize(),
          "Time": roc.cell(roc.summary(rec[kernel]["time"])),
          "AUC (%)": roc.cell(roc.summary(rec[kernel]["auc"])),
          "paper n, p, n+/n": (f"{paper_n:,}, {paper_p}, {paper_pos}"
                               if paper_n and kernel == "linear" else ""),
          "paper Time": roc.cell(paper_time),
          "paper AUC (%)": roc.cell(paper_auc),
      })
    if name == "skin":
      diff = (np.mean(rec["radial"]["auc"]) - np.mean(rec["linear"]["auc"])) / 100.0
      checks.append({"check": "radial AUC > linear AUC on Skin", "value": diff,
                     "pass": bool(diff > 0)})
  payload = {"table": 3, "splits": splits, "test_fraction": test_fraction,
             "skin_subsample": skin_subsample, "lam_grid": list(lam_grid),
             "sigma_factors": list(sigma_factors), "cv": cv, "cv_folds": cv_folds,
             "num_landmarks": num_landmarks, "landmarks": landmarks, "fit_kwargs": fit_kwargs,
             "raw": raw, "checks": checks}
  return rows, payload


def run(settings: Settings, log=cli.log_line):
  """Runs the tables of ``settings.table``; writes roc_svm_table{N}.{json,md,csv} for each."""
  s = settings
  fit_kwargs = {"max_steps": s.max_steps, "tol": s.tol, "optimizer": s.optimizer}
  if s.learning_rate is not None:
    fit_kwargs["learning_rate"] = s.learning_rate
  store = store_lib.RunStore(s.output_dir, "roc_svm_tables")
  store.start(s.as_dict(exclude=cli.RUN_OPTIONS), resume=s.resume, overwrite=s.overwrite,
              selection=("table",))
  common = dict(repetitions=s.repetitions, n_test=s.n_test, cv_folds=s.cv_folds, cv=s.cv,
                population_samples=s.population_samples, seed=s.seed, generator=s.generator,
                fit_kwargs=fit_kwargs, store=store, log=log)
  for table in s.table:
    if table == 1:
      rows, payload = run_table1(sizes=s.sizes, lam_grid=s.lam_grid,
                                 full_stream_max_n=s.full_stream_max_n,
                                 full_sorted=s.full_sorted, **common)
    elif table == 2:
      rows, payload = run_table2(sizes=s.sizes, lam_grid=s.lam_grid, sigma_grid=s.sigma_grid,
                                 exact_kernel_max_n=s.exact_kernel_max_n,
                                 num_landmarks=s.num_landmarks, **common)
    else:
      rows, payload = run_table3(datasets=s.datasets, splits=s.splits,
                                 test_fraction=s.test_fraction, skin_subsample=s.skin_subsample,
                                 lam_grid=s.lam_grid, sigma_factors=s.sigma_factors,
                                 cv_folds=s.cv_folds, cv=s.cv, num_landmarks=s.num_landmarks,
                                 data_dir=s.data_dir, seed=s.seed, fit_kwargs=fit_kwargs,
                                 store=store, log=log)
    paths = roc.write_table(store.dir, table, rows, payload)
    log(paths["md"].read_text())
  store.finish({"tables": list(s.table)})


if __name__ == "__main__":
  cli.script(Settings, run)
