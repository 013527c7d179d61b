"""The ROC-SVM paper's tables as printed, one timed ROC-SVM trial, and the real-data split.

Used by ``experiments.roc_svm_tables`` (Tables 1-3 beside the paper's numbers) and
``experiments.bench_roc_svm`` (the same rows timed per stage).
"""

import math
import time

import numpy as np

from qsg_jax import data as data_lib
from qsg_jax.roc_svm import estimator
from qsg_jax.roc_svm import model as model_lib
from qsg_jax.roc_svm import selection
from experiments.common import reporting

# Paper values: (mean, number in parentheses); AUC in %. None: not reported ("-").
PAPER_TABLE1 = {
    5000: {"full_time": (196.10, 7.75), "inc_time": (2.69, 0.15),
           "full_auc": (90.370, 0.88), "inc_auc": (90.370, 1.14)},
    10000: {"full_time": (819.10, 31.41), "inc_time": (3.02, 0.21),
            "full_auc": (90.374, 0.37), "inc_auc": (90.373, 0.54)},
    50000: {"full_time": None, "inc_time": (8.03, 0.90), "full_auc": None,
            "inc_auc": (90.375, 0.22)},
    100000: {"full_time": None, "inc_time": (10.26, 0.24), "full_auc": None,
             "inc_auc": (90.376, 0.10)},
}
PAPER_TABLE2 = {
    5000: {"exact_time": (10.21, 0.30), "nys_time": (4.64, 0.25),
           "exact_auc": (90.947, 0.53), "nys_auc": (90.921, 0.69)},
    10000: {"exact_time": (19.81, 2.84), "nys_time": (4.60, 0.52),
            "exact_auc": (90.863, 2.27), "nys_auc": (90.927, 0.64)},
    50000: {"exact_time": None, "nys_time": (5.19, 0.14), "exact_auc": None,
            "nys_auc": (90.936, 0.61)},
    100000: {"exact_time": None, "nys_time": (5.87, 0.14), "exact_auc": None,
             "nys_auc": (90.926, 0.64)},
}
PAPER_POPULATION_AUC = {"linear": 90.377, "radial": 90.985}
PAPER_TABLE3 = {  # dataset: (n, p, n+/n %, {kernel: (time, time se), (auc, auc "se")})
    "skin": (100000, 3, 20.8, {"linear": ((8.38, 2.09), (94.64, 1.96)),
                               "radial": ((5.82, 0.15), (98.53, 1.40))}),
    "bank_marketing": (41188, 18, 11.3, {"linear": ((0.43, 0.04), (74.71, 9.25)),
                                         "radial": ((46.33, 9.61), (76.04, 7.94))}),
    "accelerometer": (31991, 6, 1.8, {"linear": ((3.54, 0.12), (88.53, 9.15)),
                                      "radial": ((1.60, 0.38), (89.92, 21.61))}),
}
DATASET_TITLES = {"skin": "Skin Segmentation", "bank_marketing": "Bank Marketing",
                  "accelerometer": "Accelerometer"}


TABLE_TITLES = {1: "Table 1: linear model, full vs incomplete U-statistic",
                2: "Table 2: radial model, incomplete U with and without Nystrom (d = 300)",
                3: "Table 3: real data, linear vs radial (Nystrom) incomplete ROC-SVM"}


def cell(pair, digits=2):
  """"mean (se)" of a (mean, se) pair, or "-" when there is none."""
  if pair is None:
    return "-"
  mean, se = pair
  if mean is None or (isinstance(mean, float) and math.isnan(mean)):
    return "-"
  return f"{mean:.{digits}f} ({se:.{digits}f})"


def summary(values):
  """(mean, standard error) of a list, or None when empty."""
  if not values:
    return None
  mean, _, se = reporting.mean_std(values)
  return mean, se


def write_table(output_dir, table, rows, payload):
  """Writes ``roc_svm_table{table}.{json,md,csv}``: the table, then notes and the comparisons
  with the paper's claims (each "yes" or "NO")."""
  notes = ["Times in seconds (design + optimization, compilation excluded); AUC in %; mean "
           "(standard error) over repetitions. Paper columns as printed in the paper."]
  if "population_auc_percent" in payload:
    mean, se = payload["population_auc_percent"]
    notes.append(f"Population AUC of our generator (Monte Carlo): {mean:.3f}% (se {se:.3f}); "
                 f"the paper reports {payload['paper_population_auc_percent']:.3f}%.")
  claims = [{"claim": c["check"] + (f" (n_train = {c['n_train']:,})" if "n_train" in c else ""),
             "value": c["value"], "holds": "yes" if c["pass"] else "NO"}
            for c in payload["checks"]]
  sections = [(None, rows, None), ("Notes", [{"note": n} for n in notes], None),
              ("The paper's claims on our numbers", claims, None)]
  return reporting.write_report(output_dir, f"roc_svm_table{table}", payload, sections,
                                title=TABLE_TITLES[table])


def timed_fit(x, y, **kwargs):
  """(fit result, seconds excluding compilation, seconds including it)."""
  start = time.perf_counter()
  result = model_lib.fit(x, y, **kwargs)
  total = time.perf_counter() - start
  return result, total - result.seconds["compile"], total


def auc_percent(result, x, y):
  """AUC (in %) of a fitted model on (x, y)."""
  return 100.0 * model_lib.model_auc(result.model, x, y)


def select(x, y, grid, cv_folds, seed, **fit_kwargs):
  """The grid entry with the best cross-validated AUC (the first entry when there is one)."""
  if len(grid) == 1:
    return dict(grid[0]), None
  cv = selection.cross_validate(x, y, grid, num_folds=cv_folds, seed=seed, **fit_kwargs)
  return cv.best, [float(a) for a in cv.scores[:, 0]]


def stratified_subsample(rng, y, size):
  """Indices of a class-stratified random subsample of ``size`` points (sorted)."""
  positive = np.nonzero(y > 0)[0]
  negative = np.nonzero(y <= 0)[0]
  n_pos = int(round(size * positive.size / y.size))
  return np.sort(np.concatenate([rng.choice(positive, n_pos, replace=False),
                                 rng.choice(negative, size - n_pos, replace=False)]))


def load_binary(name, data_dir, rng, skin_subsample, loader=data_lib.load):
  """(x float64, y int {0, 1}) of a Table 3 dataset; Skin subsampled once, stratified.

  ``loader``: callable(name, data_dir=...) -> an object with ``x`` and ``y`` (a ``Dataset``).
  """
  ds = loader(name, data_dir=data_dir)
  x, y = np.asarray(ds.x, np.float64), (np.asarray(ds.y) > 0).astype(np.int32)
  if name == "skin" and skin_subsample and x.shape[0] > skin_subsample:
    keep = stratified_subsample(rng, y, skin_subsample)
    x, y = x[keep], y[keep]
  return x, y


def real_split(rng, x, y, test_fraction):
  """One split of Table 3's protocol: (x_train, y_train, x_test, y_test, sigma0).

  A stratified test part of ``test_fraction``, min-max scaling fitted on the training part, and
  sigma0 = 1 / median squared distance of training pairs (``median_heuristic_sigma``).
  """
  test = stratified_subsample(rng, y, int(round(test_fraction * y.size)))
  train = np.setdiff1d(np.arange(y.size), test)
  lo, scale = data_lib.minmax_fit(x[train])
  x_train = data_lib.minmax_apply(x[train], lo, scale).astype(np.float32)
  x_test = data_lib.minmax_apply(x[test], lo, scale).astype(np.float32)
  return x_train, y[train], x_test, y[test], estimator.median_heuristic_sigma(rng, x_train)
