"""Table 3 of the ROC-SVM paper: Skin, Bank Marketing, Accelerometer; linear vs radial.

Run through ``python -m experiments.roc_svm_tables --table=3`` (flags there).
"""

import numpy as np

from experiments import roc_svm_report as report
from experiments import roc_svm_trials as trials
from experiments import run_store
from qsg_jax import data as data_lib


def _stratified_subsample(rng, y, size):
  """Indices of a class-stratified random subsample of ``size`` points (sorted)."""
  positive = np.nonzero(y > 0)[0]
  negative = np.nonzero(y <= 0)[0]
  n_pos = int(round(size * positive.size / y.size))
  return np.sort(np.concatenate([rng.choice(positive, n_pos, replace=False),
                                 rng.choice(negative, size - n_pos, replace=False)]))


def _median_heuristic(rng, x, num=2000):
  """1 / median squared distance between random pairs of rows: a scale for sigma."""
  a = x[rng.integers(0, x.shape[0], num)]
  b = x[rng.integers(0, x.shape[0], num)]
  d2 = np.sum(np.square(a - b), axis=1)
  return 1.0 / max(float(np.median(d2[d2 > 0])) if np.any(d2 > 0) else 1.0, 1e-12)


def _load_dataset(name, data_dir):
  return data_lib.load(name, data_dir=data_dir)


def run_table3(*, datasets=("skin", "bank_marketing", "accelerometer"), splits=30,
               test_fraction=0.3, skin_subsample=100000, lam_grid=(1e-4, 1e-3, 1e-2, 1e-1),
               sigma_factors=(0.5, 1.0, 2.0), cv_folds=5, cv="first", num_landmarks=300,
               landmarks="kmeans", data_dir=None, loader=None, seed=0, fit_kwargs=None,
               log=print, store=None):
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
    loader: callable(name, data_dir) -> dataset with ``x``, ``y``; default
      ``qsg_jax.data.load``.
    fit_kwargs: extra ``roc_svm.fit`` arguments shared by all fits.

  Returns:
    (rows, payload).
  """
  if loader is None:
    loader = _load_dataset
  fit_kwargs = dict(fit_kwargs or {})
  rows, raw, checks = [], {}, []
  for d_index, name in enumerate(datasets):
    ds = loader(name, data_dir)
    rng = np.random.default_rng(seed + 1000 * d_index)
    x_all, y_all = np.asarray(ds.x, np.float64), (np.asarray(ds.y) > 0).astype(np.int32)
    if name == "skin" and skin_subsample and x_all.shape[0] > skin_subsample:
      keep = _stratified_subsample(rng, y_all, skin_subsample)
      x_all, y_all = x_all[keep], y_all[keep]
    rec = {kernel: {"time": [], "auc": [], "params": []} for kernel in ("linear", "radial")}
    chosen = {}
    for split in range(splits):
      n_test = int(round(test_fraction * y_all.size))
      test = _stratified_subsample(rng, y_all, n_test)
      train = np.setdiff1d(np.arange(y_all.size), test)
      lo, scale = data_lib.minmax_fit(x_all[train])
      x_train = data_lib.minmax_apply(x_all[train], lo, scale).astype(np.float32)
      x_test = data_lib.minmax_apply(x_all[test], lo, scale).astype(np.float32)
      y_train, y_test = y_all[train], y_all[test]
      sigma0 = _median_heuristic(rng, x_train)
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
            params, cv_auc = trials.select(x_train, y_train, grid, cv_folds, seed + split,
                                           **extra, **fit_kwargs)
            out["cv"] = {"best": params, "mean_auc": cv_auc}
          result, seconds, _ = trials.timed_fit(x_train, y_train, key=seed + split, **extra,
                                                **fit_kwargs, **params)
          out.update(params=params, time=seconds, auc=trials.auc_percent(result, x_test, y_test))
          return out

        # The split's random draws above are replayed on a resumed run; only the fits are stored.
        out = run_store.cached(store, f"table3-{name}-split{split}-{kernel}", fit_kernel)
        chosen[kernel] = out["params"]
        if "cv" in out:
          rec[kernel].setdefault("cv", []).append(out["cv"])
        for field in ("time", "auc", "params"):
          rec[kernel][field].append(out[field])
      log(f"table3 {name} split={split} linear_auc={rec['linear']['auc'][-1]:.2f} "
          f"radial_auc={rec['radial']['auc'][-1]:.2f} linear_s={rec['linear']['time'][-1]:.2f} "
          f"radial_s={rec['radial']['time'][-1]:.2f}")
    raw[name] = rec
    paper_n, paper_p, paper_pos, paper = report.PAPER_TABLE3.get(name, (None, None, None, {}))
    for kernel in ("linear", "radial"):
      paper_time, paper_auc = paper.get(kernel, (None, None))
      rows.append({
          "Dataset": report.DATASET_TITLES.get(name, name) if kernel == "linear" else "",
          "n": f"{y_all.size:,}" if kernel == "linear" else "",
          "p": str(x_all.shape[1]) if kernel == "linear" else "",
          "n+/n (%)": f"{100 * y_all.mean():.1f}" if kernel == "linear" else "",
          "Kernel": kernel.capitalize(),
          "Time": report.cell(report.summary(rec[kernel]["time"])),
          "AUC (%)": report.cell(report.summary(rec[kernel]["auc"])),
          "paper n, p, n+/n": (f"{paper_n:,}, {paper_p}, {paper_pos}"
                               if paper_n and kernel == "linear" else ""),
          "paper Time": report.cell(paper_time),
          "paper AUC (%)": report.cell(paper_auc),
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
