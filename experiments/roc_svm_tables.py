"""Reproduces Tables 1-3 of the incomplete-U ROC-SVM paper (Bae and Shin) with our numbers beside.

    python -m experiments.roc_svm_tables --table=1 --repetitions=50 --output_dir=results/roc_svm
    python -m experiments.roc_svm_tables --table=2 --repetitions=50
    QSG_JAX_DATA=../shared/data python -m experiments.roc_svm_tables --table=3 --splits=30

Table 1: linear synthetic model, full vs incomplete U-statistic (time and test AUC).
Table 2: radial synthetic model, incomplete U with the exact Gaussian kernel vs Nystrom (d = 300).
Table 3: Skin (100k subsample), Bank Marketing, Accelerometer; linear vs Nystrom radial
(``experiments.roc_svm_real_data``). The paper's numbers and the writing are in
``experiments.roc_svm_report``.

Times are wall-clock seconds of building the design (Nystrom features, kernel matrix, pairs) plus
the optimization, excluding XLA compilation (reported separately in the JSON). AUC in percent,
mean (standard error) over repetitions. Each table's markdown ends with the population AUC of our
generator and the checks of issue 4. Each repetition (Table 3: each split and kernel) is written
at once to --output_dir/cells/; ``--resume`` continues an interrupted run from them.
"""

from absl import app
from absl import flags
import jax
import numpy as np

from experiments import common_flags
from experiments import roc_svm_real_data
from experiments import roc_svm_report as report
from experiments import roc_svm_trials as trials
from experiments import run_store
from qsg_jax.roc_svm import synthetic


GENERATORS = ("as_written", "paper_auc")


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
  mean, se = synthetic.population_auc(jax.random.key(seed + 7919), model, num_samples,
                                      negative_fraction(model, generator))
  return 100.0 * mean, 100.0 * se


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
               generator="as_written", seed=0, fit_kwargs=None, log=print, store=None):
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
    store: a started ``run_store.CellStore``: each repetition is written to it at once and
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
          params, cv_auc = trials.select(x, y, grid, cv_folds, seed + rep, kernel="linear",
                                         **fit_kwargs)
          out["cv"] = {"best": params, "mean_auc": cv_auc}
        out["params"] = params
        common = dict(kernel="linear", key=seed + rep, **fit_kwargs, **params)
        result, seconds, total = trials.timed_fit(x, y, risk="incomplete", **common)
        out.update(inc_time=seconds, inc_auc=trials.auc_percent(result, x_test, y_test),
                   inc_steps=result.num_steps, compile_s=total - seconds)
        if n <= full_stream_max_n:
          result, seconds, _ = trials.timed_fit(x, y, risk="full", **common)
          out.update(full_time=seconds, full_auc=trials.auc_percent(result, x_test, y_test),
                     full_steps=result.num_steps)
        if full_sorted:
          result, seconds, _ = trials.timed_fit(x, y, risk="full_sorted", **common)
          out.update(sorted_time=seconds, sorted_auc=trials.auc_percent(result, x_test, y_test))
        return out

      params = _record(rec, run_store.cached(store, f"table1-n{n}-rep{rep}", one_rep))
      log(f"table1 n={n} rep={rep} lam={params['lam']:g} inc_auc={rec['inc_auc'][-1]:.3f} "
          f"inc_s={rec['inc_time'][-1]:.3f}"
          + (f" full_auc={rec['full_auc'][-1]:.3f} full_s={rec['full_time'][-1]:.2f}"
             if rec["full_auc"] else "")
          + (f" sorted_auc={rec['sorted_auc'][-1]:.3f} sorted_s={rec['sorted_time'][-1]:.2f}"
             if rec["sorted_auc"] else ""))
    raw[n] = rec
    paper = report.PAPER_TABLE1.get(n, {})
    rows.append({
        "n_train": f"{n:,}",
        "Full time (streamed)": report.cell(report.summary(rec["full_time"])),
        "Full time (sorted)": report.cell(report.summary(rec["sorted_time"])),
        "Incomplete time": report.cell(report.summary(rec["inc_time"]), 3),
        "Full AUC (streamed)": report.cell(report.summary(rec["full_auc"]), 3),
        "Full AUC (sorted)": report.cell(report.summary(rec["sorted_auc"]), 3),
        "Incomplete AUC": report.cell(report.summary(rec["inc_auc"]), 3),
        "paper Full time": report.cell(paper.get("full_time")),
        "paper Incomplete time": report.cell(paper.get("inc_time")),
        "paper Full AUC": report.cell(paper.get("full_auc"), 3),
        "paper Incomplete AUC": report.cell(paper.get("inc_auc"), 3),
    })
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
             "paper_population_auc_percent": report.PAPER_POPULATION_AUC["linear"],
             "repetitions": repetitions, "n_test": n_test, "lam_grid": list(lam_grid),
             "cv": cv, "cv_folds": cv_folds, "fit_kwargs": fit_kwargs,
             "full_stream_max_n": full_stream_max_n, "raw": raw, "checks": checks}
  return rows, payload


def run_table2(*, sizes=(5000, 10000, 50000, 100000), repetitions=50, n_test=25000,
               lam_grid=(1e-4, 1e-3, 1e-2), sigma_grid=(0.1, 0.5), cv_folds=5, cv="first",
               exact_kernel_max_n=10000, num_landmarks=300, landmarks="stratified",
               population_samples=4_000_000, generator="as_written", seed=0, fit_kwargs=None,
               log=print, store=None):
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
          params, cv_auc = trials.select(x, y, grid, cv_folds, seed + rep, **nystrom,
                                         **fit_kwargs)
          out["cv"] = {"best": params, "mean_auc": cv_auc}
        out["params"] = params
        common = dict(key=seed + rep, risk="incomplete", **fit_kwargs, **params)
        result, seconds, _ = trials.timed_fit(x, y, **nystrom, **common)
        out.update(nys_time=seconds, nys_auc=trials.auc_percent(result, x_test, y_test),
                   nys_steps=result.num_steps)
        if n <= exact_kernel_max_n:
          result, seconds, _ = trials.timed_fit(x, y, kernel="gaussian", **common)
          out.update(exact_time=seconds, exact_auc=trials.auc_percent(result, x_test, y_test),
                     exact_steps=result.num_steps)
        return out

      params = _record(rec, run_store.cached(store, f"table2-n{n}-rep{rep}", one_rep))
      log(f"table2 n={n} rep={rep} params={params} nys_auc={rec['nys_auc'][-1]:.3f} "
          f"nys_s={rec['nys_time'][-1]:.2f}"
          + (f" exact_auc={rec['exact_auc'][-1]:.3f} exact_s={rec['exact_time'][-1]:.2f}"
             if rec["exact_auc"] else ""))
    raw[n] = rec
    paper = report.PAPER_TABLE2.get(n, {})
    rows.append({
        "n_train": f"{n:,}",
        "Without Nystrom time": report.cell(report.summary(rec["exact_time"])),
        "Nystrom time": report.cell(report.summary(rec["nys_time"])),
        "Without Nystrom AUC": report.cell(report.summary(rec["exact_auc"]), 3),
        "Nystrom AUC": report.cell(report.summary(rec["nys_auc"]), 3),
        "paper Without time": report.cell(paper.get("exact_time")),
        "paper Nystrom time": report.cell(paper.get("nys_time")),
        "paper Without AUC": report.cell(paper.get("exact_auc"), 3),
        "paper Nystrom AUC": report.cell(paper.get("nys_auc"), 3),
    })
    if rec["exact_auc"]:
      loss = (np.mean(rec["exact_auc"]) - np.mean(rec["nys_auc"])) / 100.0
      checks.append({"check": "AUC exact kernel - AUC Nystrom (d = 300) < 0.01",
                     "n_train": n, "value": loss, "pass": bool(loss < 0.01)})
  payload = {"table": 2, "population_auc_percent": population, "generator": generator,
             "paper_population_auc_percent": report.PAPER_POPULATION_AUC["radial"],
             "repetitions": repetitions, "n_test": n_test, "grid": grid, "cv": cv,
             "cv_folds": cv_folds, "num_landmarks": num_landmarks, "landmarks": landmarks,
             "fit_kwargs": fit_kwargs, "exact_kernel_max_n": exact_kernel_max_n, "raw": raw,
             "checks": checks}
  return rows, payload


FLAGS = flags.FLAGS


_SCRIPT_FLAGS = []   # names of this script's flags (the settings a resumed run must repeat)


def _define_flags():
  """Flags are defined only when run as a script, so tests can import this module freely."""
  before = set(FLAGS)
  flags.DEFINE_list("table", ["1", "2", "3"], "Which tables to run (1, 2, 3).")
  flags.DEFINE_string("output_dir", "results/roc_svm", "Where to write the tables.")
  flags.DEFINE_integer("repetitions", 50, "Repetitions per size (Tables 1-2; paper: 50).")
  flags.DEFINE_list("sizes", ["5000", "10000", "50000", "100000"], "Training sizes (Tables 1-2).")
  flags.DEFINE_integer("n_test", 25000, "Test points per repetition (Tables 1-2).")
  flags.DEFINE_list("lam_grid", ["1e-4", "1e-3", "1e-2", "1e-1"], "Lambdas for cross-validation.")
  flags.DEFINE_list("sigma_grid", ["0.1", "0.5"], "Sigmas for cross-validation (Table 2).")
  flags.DEFINE_list("sigma_factors", ["0.5", "1", "2"],
                    "Table 3 sigma grid, multiples of the median heuristic.")
  flags.DEFINE_integer("cv_folds", 5, "Cross-validation folds.")
  flags.DEFINE_enum("cv", "first", ["first", "each"], "Select on the first repetition or each.")
  flags.DEFINE_integer("full_stream_max_n", 10000, "Largest n for the streamed full-U model.")
  flags.DEFINE_bool("full_sorted", True, "Also fit the full U by the exact sorted evaluation.")
  flags.DEFINE_integer("exact_kernel_max_n", 10000, "Largest n for the exact kernel (Table 2).")
  flags.DEFINE_integer("num_landmarks", 300, "Nystrom landmarks d.")
  flags.DEFINE_integer("population_samples", 4_000_000, "Monte Carlo size of the population AUC.")
  flags.DEFINE_integer("splits", 30, "Random splits per dataset (Table 3).")
  flags.DEFINE_float("test_fraction", 0.3, "Held-out share per split (Table 3).")
  flags.DEFINE_integer("skin_subsample", 100000, "Skin subsample size (Table 3).")
  flags.DEFINE_list("datasets", ["skin", "bank_marketing", "accelerometer"], "Table 3 datasets.")
  flags.DEFINE_string("data_dir", None, "Data directory (default $QSG_JAX_DATA).")
  flags.DEFINE_enum("generator", "as_written", list(GENERATORS),
                    "Tables 1-2 data: 80 % negatives as written, or the share of negatives that "
                    "reproduces the paper's population AUC (linear 76.3 %, radial 56.3 %).")
  flags.DEFINE_enum("optimizer", "lbfgs", ["lbfgs", "adamax"],
                    "lbfgs (default, fast) or adamax (the paper's optimizer).")
  flags.DEFINE_float("learning_rate", None, "Adamax learning rate (--optimizer=adamax only).")
  flags.DEFINE_integer("max_steps", 2000, "Most full-batch steps per fit.")
  flags.DEFINE_float("tol", 1e-6, "Relative-change tolerance of the stopping rule.")
  flags.DEFINE_integer("seed", 0, "Base seed.")
  _SCRIPT_FLAGS[:] = sorted(set(FLAGS) - before)
  common_flags.define_resume_flag()


def main(argv):
  del argv
  fit_kwargs = {"max_steps": FLAGS.max_steps, "tol": FLAGS.tol, "optimizer": FLAGS.optimizer}
  if FLAGS.learning_rate is not None:
    fit_kwargs["learning_rate"] = FLAGS.learning_rate
  sizes = [int(s) for s in FLAGS.sizes]
  lam_grid = [float(v) for v in FLAGS.lam_grid]
  common = dict(repetitions=FLAGS.repetitions, n_test=FLAGS.n_test, cv_folds=FLAGS.cv_folds,
                cv=FLAGS.cv, population_samples=FLAGS.population_samples, seed=FLAGS.seed,
                generator=FLAGS.generator,
                fit_kwargs=fit_kwargs)
  store = run_store.CellStore(FLAGS.output_dir)
  store.start({name: FLAGS[name].value for name in _SCRIPT_FLAGS}, FLAGS.resume)
  common["store"] = store
  for table in FLAGS.table:
    if table == "1":
      rows, payload = run_table1(sizes=sizes, lam_grid=lam_grid,
                                 full_stream_max_n=FLAGS.full_stream_max_n,
                                 full_sorted=FLAGS.full_sorted, **common)
    elif table == "2":
      rows, payload = run_table2(sizes=sizes, lam_grid=lam_grid,
                                 sigma_grid=[float(v) for v in FLAGS.sigma_grid],
                                 exact_kernel_max_n=FLAGS.exact_kernel_max_n,
                                 num_landmarks=FLAGS.num_landmarks, **common)
    elif table == "3":
      rows, payload = roc_svm_real_data.run_table3(datasets=FLAGS.datasets, splits=FLAGS.splits,
                                 test_fraction=FLAGS.test_fraction,
                                 skin_subsample=FLAGS.skin_subsample, lam_grid=lam_grid,
                                 sigma_factors=[float(v) for v in FLAGS.sigma_factors],
                                 cv_folds=FLAGS.cv_folds, cv=FLAGS.cv,
                                 num_landmarks=FLAGS.num_landmarks, data_dir=FLAGS.data_dir,
                                 seed=FLAGS.seed, fit_kwargs=fit_kwargs, store=store)
    else:
      raise app.UsageError(f"--table takes 1, 2 or 3; received {table!r}.")
    paths = report.write_table(FLAGS.output_dir, int(table), rows, payload)
    print(open(paths["md"]).read())
  store.finish_cells()


if __name__ == "__main__":
  _define_flags()
  app.run(main)
