r"""The direct solver against DSG, the exact minimizer, SVC and LightGBM, side by side (issue 26).

  QSG_JAX_DATA=../shared/data nice -n 19 python -m experiments.bench_direct
  QSG_JAX_DATA=../shared/data nice -n 19 python -m experiments.bench_direct --parts=features

Parts (``--parts``), each measured in one run on the same splits (trial t of seed 0,
``protocols.trial_key``; the papers' protocols: sgemm ordinal with 500 labels scored on the
unlabeled points, binary sets with 200 labels scored on test points; --num_unlabeled unlabeled
training points, a random subset of the trial's):
  features:  test AUC against p for the Fourier and Nystrom maps (and uniform landmarks) at two
             settings (the defaults, and the roughest kernel of the papers' grid with its smallest
             lam), with the exact kernel minimizer ``baselines.fit_exact_qsg`` on the first
             --exact_splits splits (80 s and 5 GB each at 20,000 unlabeled points on 2 cores).
  fit:       warm fit time and AUC of the direct solver (default map and p), DSG (``qsg_jax.fit``,
             defaults), the exact minimizer and scikit-learn's SVC (binary; SVR on the class
             index for ordinal sgemm), defaults of each; the speed ratio direct / DSG.
  unlabeled: time of the statistics pass over every unlabeled sgemm point (241,100) at each
             --pass_chunk_rows, from host memory (``direct.moments.group_moments``: chunks
             checked and copied to the device) and on the devices (``distributed.load_unlabeled``
             then ``moments.sharded_unlabeled_moments``: the chunk loop inside one compiled
             program, the device's own work), its rate (the floating-point operations the
             pass executes per second, ``pass_flops``) against the rate of one --peak_size
             square float32 matmul at HIGHEST precision on the same device in the same run
             (run it with JAX_PLATFORMS=cuda for a GPU's figure), and time and peak resident
             memory against n_u for chunks read from an .npy file (a fresh peak per size:
             Linux /proc/self/clear_refs).
  labeled:   fully labeled data (no unlabeled points, gamma = 1): fit time and AUC against the
             number of labels, side by side with LightGBM (n_jobs 1 and 2, the faster counts)
             and SVC (SVC up to --svc_max_labels); the direct solver at the defaults and at lam
             and sigma chosen by its 5-fold CV on the training labels (--labeled_cv).
             cod-rna has 47,628 training rows, so the largest size runs on skin.
  cv:        the papers' 539-point x 5-fold grid (``direct.cross_validate``), end to end.
Timings are wall-clock seconds of the second call (the first compiles), on a machine that may
be shared: read them as upper bounds and compare only numbers of one run.
"""

import json
import os
import tempfile
import time

from absl import app
from absl import flags
import jax
import jax.numpy as jnp
import numpy as np
from sklearn import metrics as sk_metrics

import qsg_jax
from experiments.common import protocols
from experiments.common import reporting
from qsg_jax import baselines
from qsg_jax import data as data_lib
from qsg_jax import direct

_PARTS = flags.DEFINE_list("parts", ["features", "fit", "unlabeled", "labeled", "cv"],
                           "Benchmarks to run.")
_FEATURE_DATASETS = flags.DEFINE_list(
    "feature_datasets", ["sgemm", "cod_rna", "ijcnn1", "skin", "bank_marketing",
                         "accelerometer"], "Datasets of the features part.")
_FIT_DATASETS = flags.DEFINE_list("fit_datasets", ["sgemm", "cod_rna", "ijcnn1"],
                                  "Datasets of the fit and cv parts.")
_SPLITS = flags.DEFINE_integer("splits", 3, "Random splits (trials) per dataset.")
_EXACT_SPLITS = flags.DEFINE_integer("exact_splits", 1,
                                     "Splits on which the exact minimizer runs (features part).")
_EXACT_SETTINGS = flags.DEFINE_list("exact_settings", ["default"],
                                    "Settings at which the exact minimizer runs (features part).")
_NUM_UNLABELED = flags.DEFINE_integer("num_unlabeled", 20000, "Unlabeled training points.")
_EVAL_SIZE = flags.DEFINE_integer("eval_size", 20000, "Evaluation points (random subset).")
_FEATURE_COUNTS = flags.DEFINE_list("feature_counts", ["128", "256", "512", "1024", "2048"],
                                    "p values of the features part.")
_MAPS = flags.DEFINE_list("maps", ["rff", "nystrom", "nystrom_uniform"], "Feature maps.")
_UNLABELED_COUNTS = flags.DEFINE_list("unlabeled_counts", ["10000", "30000", "100000", "241100"],
                                      "n_u values of the unlabeled part.")
_PASS_CHUNKS = flags.DEFINE_list("pass_chunk_rows", ["4096", "32768"],
                                 "Chunk rows of the unlabeled part's in-memory pass (the first: "
                                 "the library's default).")
_PEAK_SIZE = flags.DEFINE_integer("peak_size", 4096, "N of the N x N x N float32 matmul whose "
                                  "rate the unlabeled part's pass rate is compared with.")
_LABELED_COUNTS = flags.DEFINE_list("labeled_counts", ["cod_rna:10000", "cod_rna:47628",
                                                       "skin:10000", "skin:50000",
                                                       "skin:196045"],
                                    "dataset:labels of the labeled part.")
_LIGHTGBM_JOBS = flags.DEFINE_list("lightgbm_jobs", ["1", "2"],
                                   "LightGBM n_jobs values of the labeled part (2: as many "
                                   "threads as XLA uses on 2 cores).")
_LABELED_CV = flags.DEFINE_bool(
    "labeled_cv", True, "Labeled part: also the direct solver at lam and sigma chosen by "
    "direct.cross_validate (5 folds of the training labels, the papers' 7 x 7 lam x sigma grid, "
    "gamma = 1).")
_SVC_MAX = flags.DEFINE_integer("svc_max_labels", 50000, "Largest label count SVC runs at.")
_FIT_EXACT_SPLITS = flags.DEFINE_integer("fit_exact_splits", 1,
                                         "Splits on which the exact minimizer runs (fit part).")
_FIT_FEATURES = flags.DEFINE_list("fit_features", [],
                                  "Other p of the direct solver timed in the fit part (columns "
                                  "direct_p<p>, direct_p<p>_s; the default map is p = 512).")
_DSG_REPEATS = flags.DEFINE_integer("dsg_repeats", 1, "Timed DSG fits after the first (fit part).")
_OUTPUT = flags.DEFINE_string("output", "results/bench_direct/results.json",
                              "JSON output, written (atomically) after each part.")
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Replace an existing --output file.")


def _whole(text, low):
  return text.strip().lstrip("-").isdigit() and int(text) >= low


def _validate_flags():
  """Flag checks at parsing: absl's error names the flag, the value and what it must be."""
  parts, maps = ("features", "fit", "unlabeled", "labeled", "cv"), ("rff", "nystrom",
                                                                    "nystrom_uniform")
  datasets = lambda v: bool(v) and all(name in data_lib.available() for name in v)
  checks = [
      ("parts", lambda v: bool(v) and set(v) <= set(parts), f"entries of {parts} (not empty)"),
      ("feature_datasets", datasets, "names of qsg_jax.data.available()"),
      ("fit_datasets", datasets, "names of qsg_jax.data.available()"),
      ("maps", lambda v: bool(v) and set(v) <= set(maps), f"entries of {maps}"),
      ("exact_settings", lambda v: set(v) <= {"default", "rough"}, "entries of default, rough"),
      ("feature_counts", lambda v: bool(v) and all(_whole(p, 1) for p in v), "whole numbers >= 1"),
      ("unlabeled_counts", lambda v: bool(v) and all(_whole(n, 1) for n in v),
       "whole numbers >= 1"),
      ("labeled_counts", lambda v: all(s.count(":") == 1 and s.split(":")[0] in
                                       data_lib.available() and _whole(s.split(":")[1], 2)
                                       for s in v), "dataset:labels entries, labels >= 2"),
      ("lightgbm_jobs", lambda v: all(_whole(j, 1) for j in v), "whole numbers >= 1"),
      ("pass_chunk_rows", lambda v: bool(v) and all(_whole(n, 1) for n in v),
       "whole numbers >= 1"),
      ("output", lambda v: bool(v.strip()), "a file name (not empty)")]
  for name, low in (("splits", 1), ("exact_splits", 0), ("num_unlabeled", 1), ("eval_size", 1),
                    ("svc_max_labels", 0), ("fit_exact_splits", 0), ("dsg_repeats", 0),
                    ("peak_size", 1)):
    checks.append((name, lambda v, low=low: v is not None and v >= low, f"an integer >= {low}"))
  for name, check, what in checks:
    flags.register_validator(name, check, message=f"--{name} must be {what}.")


_validate_flags()

DEFAULTS = dict(sigma=0.1, lam=1e-3, gamma=0.5)        # qsg_jax.fit's defaults
ROUGH = dict(sigma=8.0, lam=0.125, gamma=0.5)          # the grid's narrowest kernel, smallest lam


def trial_data(name, split, num_unlabeled, eval_size):
  """(x_l, y_l, x_u, x_eval, y_eval, k) of trial ``split`` (seed 0) of ``name``."""
  dataset = data_lib.load(name)
  proto = protocols.protocol_for(dataset)
  key = protocols.trial_key(0, split)
  trial = protocols.make_trial(dataset, proto, key)
  rng = protocols.stream_rng(key, "unlabeled_order")
  x_u = trial.x_unlabeled[np.sort(rng.choice(trial.x_unlabeled.shape[0],
                                             min(num_unlabeled, trial.x_unlabeled.shape[0]),
                                             replace=False))]
  # Ordinal: trial.x_eval is the unlabeled set (the ordinal paper's scoring); binary: test data.
  idx = np.sort(rng.choice(trial.x_eval.shape[0], min(eval_size, trial.x_eval.shape[0]),
                           replace=False))
  x_e, y_e = trial.x_eval[idx], trial.y_eval[idx]
  return trial.x_labeled, trial.y_labeled, x_u, x_e, y_e, proto.num_classes


def ordinal_auc(scores, y, k):
  """Mean over splits j of the AUC of {y > j} against {y <= j} (binary AUC for k = 2)."""
  return float(np.mean([sk_metrics.roc_auc_score(y > j, scores) for j in range(k - 1)]))


def timed(fn, repeats=1):
  """(seconds of the fastest of ``repeats`` calls after a first, compiling call, result).

  ``repeats=0`` times the first call itself (for methods too slow to run twice).
  """
  start = time.perf_counter()
  out = fn()
  best = time.perf_counter() - start if repeats == 0 else np.inf
  for _ in range(repeats):
    start = time.perf_counter()
    out = fn()
    best = min(best, time.perf_counter() - start)
  return best, out


def table(rows, columns):
  """Markdown table of dict rows."""
  fmt = lambda v: f"{v:.4f}" if isinstance(v, float) else str(v)
  lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
  lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in columns) + " |" for r in rows]
  return "\n".join(lines)


def uniform_landmarks(seed, x_l, x_u, p):
  pool = np.concatenate([x_l, x_u])
  return pool[np.random.default_rng(seed).choice(pool.shape[0], p, replace=False)]


def direct_fit(x_l, y_l, x_u, k, setting, kind, p, seed):
  """A direct fit of map ``kind`` ("rff", "nystrom", "nystrom_uniform") with p features."""
  if kind == "nystrom_uniform":
    return direct.fit(x_l, y_l, x_u, key=seed, num_classes=k, feature_map="nystrom",
                      landmarks=uniform_landmarks(seed, x_l, x_u, p), **setting)
  return direct.fit(x_l, y_l, x_u, key=seed, num_classes=k, feature_map=kind, num_features=p,
                    **setting)


def part_features():
  """AUC against p for each map, two settings, exact minimizer on the first splits."""
  rows = []
  counts = [int(p) for p in _FEATURE_COUNTS.value]
  for name in _FEATURE_DATASETS.value:
    for split in range(_SPLITS.value):
      x_l, y_l, x_u, x_e, y_e, k = trial_data(name, split, _NUM_UNLABELED.value, _EVAL_SIZE.value)
      for label, setting in (("default", DEFAULTS), ("rough", ROUGH)):
        row = dict(dataset=name, split=split, setting=label)
        if split < _EXACT_SPLITS.value and label in _EXACT_SETTINGS.value:
          seconds, model = timed(lambda: baselines.fit_exact_qsg(
              x_l, y_l, x_u, num_classes=k, **setting), repeats=0)
          row["exact"] = ordinal_auc(baselines.decision_function(model, x_e), y_e, k)
          row["exact_s"] = seconds
          del model
        for kind in _MAPS.value:
          for p in counts:
            seconds, result = timed(lambda: direct_fit(x_l, y_l, x_u, k, setting, kind, p,
                                                       split), repeats=0)   # compile included
            row[f"{kind}_{p}"] = ordinal_auc(direct.decision_function(result.model, x_e), y_e,
                                             k)
            row[f"{kind}_{p}_s"] = seconds
        rows.append(row)
        print(json.dumps(row), flush=True)
  return rows


def summarize_features(rows):
  """Per dataset and setting: mean AUC per (map, p), and the exact gap where known."""
  out = []
  keys = sorted({(r["dataset"], r["setting"]) for r in rows}, key=str)
  for dataset, setting in keys:
    group = [r for r in rows if r["dataset"] == dataset and r["setting"] == setting]
    summary = dict(dataset=dataset, setting=setting)
    for column in group[0]:
      if column in ("dataset", "setting", "split"):
        continue
      values = [r[column] for r in group if column in r]
      summary[column] = float(np.mean(values))
    exact_rows = [r for r in group if "exact" in r]
    for column in group[0]:
      if column.endswith("_s") or column in ("dataset", "setting", "split", "exact"):
        continue
      if exact_rows:
        summary[f"gap_{column}"] = float(np.mean([r["exact"] - r[column] for r in exact_rows]))
    out.append(summary)
  return out


def svc_scores(x_l, y_l, x_e, k):
  """scikit-learn's SVC (binary) or SVR on the class index (ordinal), defaults, labeled only."""
  from sklearn import svm   # pylint: disable=g-import-not-at-top,import-outside-toplevel
  if k == 2:
    model = svm.SVC().fit(x_l, y_l)
    return model.decision_function(x_e)
  return svm.SVR().fit(x_l, y_l.astype(np.float64)).predict(x_e)


def part_fit():
  """Direct (defaults) vs DSG (qsg_jax.fit defaults) vs exact vs SVC: warm time and AUC."""
  rows = []
  for name in _FIT_DATASETS.value:
    for split in range(_SPLITS.value):
      x_l, y_l, x_u, x_e, y_e, k = trial_data(name, split, _NUM_UNLABELED.value, _EVAL_SIZE.value)
      row = dict(dataset=name, split=split)
      seconds, result = timed(lambda: direct.fit(x_l, y_l, x_u, key=split, num_classes=k,
                                                 **DEFAULTS), repeats=3)
      row.update(direct_s=seconds, direct=ordinal_auc(
          direct.decision_function(result.model, x_e), y_e, k))
      for p in [int(p) for p in _FIT_FEATURES.value]:
        seconds, result = timed(lambda: direct.fit(x_l, y_l, x_u, key=split, num_classes=k,
                                                   num_features=p, **DEFAULTS), repeats=3)
        row[f"direct_p{p}_s"] = seconds
        row[f"direct_p{p}"] = ordinal_auc(direct.decision_function(result.model, x_e), y_e, k)
      seconds, result = timed(lambda: qsg_jax.fit(x_l, y_l, x_u, key=split, num_classes=k,
                                                   **DEFAULTS), repeats=_DSG_REPEATS.value)
      row.update(dsg_s=seconds, dsg=ordinal_auc(qsg_jax.decision_function(result, x_e), y_e, k))
      if split < _FIT_EXACT_SPLITS.value:
        seconds, model = timed(lambda: baselines.fit_exact_qsg(x_l, y_l, x_u, num_classes=k,
                                                               **DEFAULTS), repeats=0)
        row.update(exact_s=seconds, exact=ordinal_auc(baselines.decision_function(model, x_e),
                                                      y_e, k))
        del model
      seconds, scores = timed(lambda: svc_scores(x_l, y_l, x_e, k), repeats=0)
      row.update(svc_s=seconds, svc=ordinal_auc(scores, y_e, k))
      row["dsg_over_direct_time"] = row["dsg_s"] / row["direct_s"]
      rows.append(row)
      print(json.dumps(row), flush=True)
  return rows


def _status(field):
  """VmRSS / VmHWM of this process in bytes (Linux)."""
  with open("/proc/self/status") as f:
    return int(next(l for l in f if l.startswith(field + ":")).split()[1]) * 1024


def _reset_peak():
  with open("/proc/self/clear_refs", "w") as f:
    f.write("5")


def npy_chunks(path, rows, limit):
  """The first ``limit`` rows of an .npy file as [rows, d] chunks read with plain file reads."""
  with open(path, "rb") as f:
    version = np.lib.format.read_magic(f)
    shape, _, dtype = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)(f)
    for lo in range(0, min(limit, shape[0]), rows):
      count = min(rows, limit - lo) * shape[1]
      yield np.fromfile(f, dtype, count=count).reshape(-1, shape[1])


def pass_flops(feature_map, num_points):
  """Floating-point operations the statistics pass executes on ``num_points`` points of one
  group, on the map's live features and landmarks (``moments.live_map``: r features, q
  landmarks): the kernel's distances (2 q d per point), the projection (2 q r), the second
  moment (2 r^2, three quarters of it from ``moments.SYMMETRIC_MIN`` features on) and the sum
  (r); padding rows of the last chunk not counted."""
  if not isinstance(feature_map, direct.feature_maps.NystromMap):
    raise TypeError("pass_flops counts the pass of a NystromMap.")
  live = direct.moments.live_map(feature_map)
  dim, r = direct.feature_maps.input_dim(live), direct.feature_maps.num_features(live)
  q = live.landmarks.shape[0]
  outer = 2 * r * r * (0.75 if r >= direct.moments.SYMMETRIC_MIN else 1.0)
  return float(num_points) * (2 * q * dim + 2 * q * r + outer + r)


def matmul_rate(n):
  """Floating-point operations per second of one [n, n] x [n, n] float32 product at HIGHEST
  precision on the default device (fastest of 5 after a compiling call)."""
  a = jax.random.uniform(jax.random.key(0), (n, n), jnp.float32)
  product = jax.jit(lambda a: jnp.matmul(a, a, precision=jax.lax.Precision.HIGHEST))
  seconds, _ = timed(lambda: product(a).block_until_ready(), repeats=5)
  return 2.0 * n ** 3 / seconds


def part_unlabeled():
  """Statistics over every unlabeled sgemm point: time and rate against the device's matmul
  rate per chunk size; time and peak memory against n_u (chunks from a file)."""
  x_l, y_l, _, _, _, k = trial_data("sgemm", 0, 1, 1)
  dataset = data_lib.load("sgemm")
  trial = protocols.make_trial(dataset, protocols.protocol_for(dataset), protocols.trial_key(0, 0))
  x_all = trial.x_unlabeled
  key = jax.random.key(0)
  psi = direct.fitting.make_feature_map(
      "nystrom", key, DEFAULTS["sigma"], direct.fitting.NUM_FEATURES, x_l.shape[1],
      points=direct.fitting.landmark_points(key, x_l, x_all)[0])
  shift = direct.moments.feature_shift(psi, x_l)
  rows = []
  peak = matmul_rate(_PEAK_SIZE.value)
  mesh = qsg_jax.distributed.global_mesh()
  resident = qsg_jax.distributed.load_unlabeled(x_all, mesh)
  passes = {"in-memory array": lambda rows: direct.moments.group_moments(
                psi, x_all, shift, chunk_rows=rows),
            "on the devices": lambda rows: direct.moments.sharded_unlabeled_moments(
                psi, resident, shift, mesh, chunk_rows=rows)}
  for what, run in passes.items():
    for chunk_rows in [int(c) for c in _PASS_CHUNKS.value]:
      seconds, _ = timed(lambda: run(chunk_rows), repeats=3)
      rate = pass_flops(psi, x_all.shape[0]) / seconds
      rows.append(dict(what=what, n_u=x_all.shape[0], chunk_rows=chunk_rows, seconds=seconds,
                       pass_gflops=rate / 1e9, matmul_gflops=peak / 1e9,
                       fraction_of_matmul=rate / peak, device=str(jax.devices()[0])))
      print(json.dumps(rows[-1]), flush=True)
  with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "x_u.npy")
    np.save(path, x_all)
    del x_all
    for n_u in [int(n) for n in _UNLABELED_COUNTS.value]:
      run = lambda: direct.moments.group_moments(psi, npy_chunks(path, 4096, n_u), shift)
      run()                                            # compile, warm the file cache
      _reset_peak()
      before = _status("VmRSS")
      start = time.perf_counter()
      stats = run()
      seconds = time.perf_counter() - start
      rows.append(dict(what="chunks from .npy", n_u=n_u, seconds=seconds,
                       peak_growth_mib=(_status("VmHWM") - before) / 2**20,
                       counted=int(stats.counts[0])))
      print(json.dumps(rows[-1]), flush=True)
  return rows


def fully_labeled(name, num_labels, seed=0):
  """(x_train, y_train, x_test, y_test): ``num_labels`` labeled points, min-max scaled."""
  dataset = data_lib.load(name)
  rng = np.random.default_rng(seed)
  y = np.asarray(dataset.y > 0 if dataset.task == "binary" else dataset.y, np.int32)
  order = rng.permutation(dataset.x.shape[0])
  test, train = order[:int(0.2 * order.size)], order[int(0.2 * order.size):]
  train = train[:num_labels]
  lo, scale = data_lib.minmax_fit(dataset.x[train])
  scaled = lambda a: data_lib.minmax_apply(a, lo, scale).astype(np.float32)
  return scaled(dataset.x[train]), y[train], scaled(dataset.x[test]), y[test]


def part_labeled():
  """Fully labeled data: direct (gamma = 1) against LightGBM and SVC."""
  import lightgbm   # pylint: disable=g-import-not-at-top,import-outside-toplevel
  from sklearn import svm   # pylint: disable=g-import-not-at-top,import-outside-toplevel
  rows = []
  for spec in _LABELED_COUNTS.value:
    name, count = spec.split(":")
    x, y, x_t, y_t = fully_labeled(name, int(count))
    row = dict(dataset=name, labels=x.shape[0])
    seconds, result = timed(lambda: direct.fit(x, y, None, gamma=1.0, sigma=DEFAULTS["sigma"],
                                               lam=DEFAULTS["lam"]), repeats=1)
    row.update(direct_s=seconds, direct=sk_metrics.roc_auc_score(
        y_t, direct.decision_function(result.model, x_t)))
    if _LABELED_CV.value:   # chosen on the training labels only
      grid = dict(direct.paper_grid(), gamma=[1.0])
      start = time.perf_counter()
      best = direct.cross_validate(x, y, None, grid=grid).best
      row["direct_cv_search_s"] = time.perf_counter() - start
      seconds, result = timed(lambda: direct.fit(x, y, None, **best), repeats=1)
      row.update(direct_cv_s=seconds, direct_cv_best=best, direct_cv=sk_metrics.roc_auc_score(
          y_t, direct.decision_function(result.model, x_t)))
    # n_jobs=2 matches XLA's threads; on a loaded 2-core machine LightGBM's OpenMP threads ran
    # 10-20x slower with 2 than with 1, so both are timed and the faster one is its time.
    for jobs in [int(j) for j in _LIGHTGBM_JOBS.value]:
      seconds, model = timed(lambda: lightgbm.LGBMClassifier(verbose=-1, n_jobs=jobs).fit(x, y),
                             repeats=1)
      row[f"lightgbm_{jobs}_s"] = seconds
      if seconds <= row.get("lightgbm_s", np.inf):
        row.update(lightgbm_s=seconds, lightgbm=sk_metrics.roc_auc_score(
            y_t, model.predict_proba(x_t)[:, 1]))
    row["lightgbm_over_direct_time"] = row["lightgbm_s"] / row["direct_s"]
    if x.shape[0] <= _SVC_MAX.value:
      seconds, model = timed(lambda: svm.SVC().fit(x, y), repeats=0)
      row.update(svc_s=seconds, svc=sk_metrics.roc_auc_score(y_t, model.decision_function(x_t)))
    rows.append(row)
    print(json.dumps(row), flush=True)
  return rows


def part_cv():
  """The papers' 539-point x 5-fold grid with the direct solver, end to end (twice)."""
  rows = []
  for name in _FIT_DATASETS.value:
    x_l, y_l, x_u, _, _, k = trial_data(name, 0, _NUM_UNLABELED.value, 1)
    start = time.perf_counter()
    result = direct.cross_validate(x_l, y_l, x_u, num_classes=k)
    first = time.perf_counter() - start
    start = time.perf_counter()
    direct.cross_validate(x_l, y_l, x_u, num_classes=k)
    rows.append(dict(dataset=name, first_s=first, warm_s=time.perf_counter() - start,
                     best=result.best, cv_auc=result.best_score))
    print(json.dumps(rows[-1]), flush=True)
  return rows


def main(argv):
  del argv
  folder = os.path.dirname(_OUTPUT.value) or "."
  try:                                   # before hours of benchmarks, not after them
    os.makedirs(folder, exist_ok=True)
  except OSError as e:
    raise app.UsageError(f"--output={_OUTPUT.value!r}: cannot create its folder ({e}).") from None
  if not os.access(folder, os.W_OK):
    raise app.UsageError(f"--output={_OUTPUT.value!r}: its folder {folder!r} is not writable.")
  if os.path.isdir(_OUTPUT.value):
    raise app.UsageError(f"--output={_OUTPUT.value!r} is a directory; pass a file name, e.g. "
                         f"{os.path.join(_OUTPUT.value, 'results.json')!r}.")
  if os.path.exists(_OUTPUT.value) and not _OVERWRITE.value:
    raise app.UsageError(f"--output={_OUTPUT.value!r} exists (an earlier benchmark's results); "
                         "pass --overwrite to replace it, or another --output.")
  results = {}
  save = lambda: reporting.atomic_write_json(_OUTPUT.value, results)
  if "features" in _PARTS.value:
    rows = part_features()
    results["features"] = rows
    summary = summarize_features(rows)
    results["features_summary"] = summary
    counts = _FEATURE_COUNTS.value
    columns = ["dataset", "setting", "exact"] + [f"{m}_{p}" for m in _MAPS.value for p in counts]
    print(table(summary, columns))
    print(table(summary, ["dataset", "setting"] + [f"{m}_{p}_s" for m in _MAPS.value
                                                   for p in counts]))
    save()
  if "fit" in _PARTS.value:
    rows = results["fit"] = part_fit()
    print(table(rows, ["dataset", "split", "direct", "dsg", "exact", "svc", "direct_s", "dsg_s",
                       "exact_s", "svc_s", "dsg_over_direct_time"]))
    save()
  if "unlabeled" in _PARTS.value:
    rows = results["unlabeled"] = part_unlabeled()
    print(table(rows, ["what", "n_u", "chunk_rows", "seconds", "pass_gflops", "matmul_gflops",
                       "fraction_of_matmul", "peak_growth_mib"]))
    save()
  if "labeled" in _PARTS.value:
    rows = results["labeled"] = part_labeled()
    print(table(rows, ["dataset", "labels", "direct", "direct_cv", "lightgbm", "svc",
                       "direct_s", "direct_cv_s", "direct_cv_search_s", "lightgbm_s", "svc_s",
                       "lightgbm_over_direct_time"] +
                [f"lightgbm_{j}_s" for j in _LIGHTGBM_JOBS.value]))
    save()
  if "cv" in _PARTS.value:
    rows = results["cv"] = part_cv()
    print(table(rows, ["dataset", "first_s", "warm_s", "cv_auc", "best"]))
  save()


def _main_or_usage_error(argv):
  """``main``, with a missing data set reported as a usage error (the fix, no traceback)."""
  try:
    main(argv)
  except qsg_jax.errors.DataNotFoundError as e:
    raise app.UsageError(str(e)) from None


if __name__ == "__main__":
  app.run(_main_or_usage_error)
