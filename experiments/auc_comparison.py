r"""AUC over trials: QSG-S2AUC / QS3ORAO against SAMULT, PNU-AUC, their M- versions and SVOREX.

  QSG_JAX_DATA=../shared/data python -m experiments.auc_comparison --datasets=cod_rna
  python -m experiments.auc_comparison --datasets=breast_cancer,lev,era,esl,swd   # embedded sets

Both papers' Figure 2 (box plots of AUC over 10 trials). Binary datasets (200 labeled, AUC on test
data) compare QSG-S2AUC, SAMULT and PNU-AUC; ordinal ones (500 labeled, 5 classes for regression
targets, ordinal AUC of Eq. 2 on the unlabeled data) compare QS3ORAO, M-SAMULT, M-PNU-AUC and the
supervised SVOREX trained on the same labeled points.

Sizes. The exact methods cost O(n^3) time and O(n^2) memory, so every method is compared at one
common unlabeled size (``--common_size``, default 5,000: a random subset of the trial's unlabeled
points, the same for every method); QSG is also run on the whole unlabeled set ("full"). On
ordinal data the AUC is taken on the model's own unlabeled training points (the common subset, or
``--eval_size`` random points of the whole set for "full"; SVOREX is scored on both); on binary
data on ``--eval_size`` random test points. Each trial is one ``protocols.make_trial`` split,
identical for every method.

Hyper-parameters are chosen once per dataset and method by k-fold cross-validation
(``qsg_jax.model_selection`` for QSG, ``qsg_jax.baselines.cross_validate`` for the others) on a
separate split (seed ``--cv_seed``) with ``--cv_unlabeled`` unlabeled points, then used in every
trial. ``--cv_grid=quick`` (default) searches lam in {1e-3, 2^-3} and sigma in {2^-3, 1} for every
method, gamma in {0, 0.5, 1} (PNU-AUC: eta in {-1, -0.5, 0, 0.5, 1}, the same weights 1 - |eta|
of the labeled pairs) and SVOREX's C in {1, 8} (flags --cv_lam, --cv_sigma, ... change them);
QSG's step size is fixed at ``--step_size`` unless ``--cv_step_size`` lists values to search (a
run that diverges in a fold scores NaN and is never chosen);
``--cv_grid=paper`` the papers' grid (lam, sigma in 2^-3..2^3, gamma step 0.1: hours per
dataset); ``--cv_grid=fixed`` skips CV. For CV only, classes with fewer labeled points than folds
are merged into an ordinal neighbour (ESL has classes with one labeled point); the M- methods
then pick one setting for all splits instead of one per split.

With ``--exact_qsg`` (default) every trial also solves QSG's own objective exactly, with QSG's
chosen hyper-parameters (``qsg_jax.baselines.fit_exact_qsg``, "QS3ORAO-exact" / "QSG-S2AUC-exact"):
QSG minus it is the cost of the random-feature, stochastic approximation alone, and it minus
M-SAMULT the cost of one ranking function for all splits against k-1 independent ones.

Writes auc_comparison.{json,md,csv,png} into --output_dir and prints the issue's checks: QSG mean
AUC within 0.01 of the better exact method at the common size, and QS3ORAO against SVOREX. A real
dataset whose files are missing is skipped with a message (and listed in the outputs).
``run_comparison`` does the work with plain keyword arguments (flags are defined only when this
runs as a script).
"""

import time

from absl import app
from absl import flags
import jax
import numpy as np

import qsg_jax
from qsg_jax import baselines
from qsg_jax import data as data_lib
from qsg_jax import memory
from qsg_jax import model_selection
from experiments import protocols
from experiments import reporting

FLAGS = flags.FLAGS

DEFAULT_DATASETS = ("cod_rna", "ijcnn1", "skin", "dota2", "bank_marketing", "accelerometer",
                    "breast_cancer", "sgemm", "lev", "era", "esl", "swd")
# Settings of ``run_comparison`` (one flag each, same name, when run as a script).
DEFAULT_SETTINGS = {
    "data_dir": None,           # data directory (default $QSG_JAX_DATA)
    "trials": 10,               # trials (random splits) per dataset
    "num_labeled": None,        # labeled points (default 200 binary, 500 ordinal, <= half the data)
    "seed": 0,                  # seed of trial 0; trial t uses seed + t
    "common_size": 5000,        # unlabeled points every method trains on (the exact methods' size)
    "full": True,               # also run QSG on the whole unlabeled set
    "eval_size": 20000,         # score on at most this many points
    "cv_grid": "quick",         # "quick", "paper" or "fixed" (no CV)
    "cv_lam": [1e-3, 0.125],    # lam values of the quick grid
    "cv_sigma": [0.125, 1.0],   # sigma values of the quick grid
    "cv_gamma": [0.0, 0.5, 1.0],  # gamma values of the quick grid (PNU-AUC: eta = +-(1 - gamma))
    "cv_c": [1.0, 8.0],         # SVOREX C values of the quick grid
    "cv_unlabeled": 1000,       # unlabeled points used in CV
    "cv_folds": 5,              # folds of the cross-validation
    "cv_seed": 1000,            # seed of the split used for CV (not a trial)
    "num_steps": 1024,          # QSG iterations T
    "num_frequencies": 32,      # QSG frequencies per block
    "unlabeled_batch_size": 128,  # QSG unlabeled points per step
    "step_size": 3.0,           # QSG initial step (the CV's only value unless cv_step_size is set)
    "cv_step_size": None,       # step sizes the CV searches for QSG (None: step_size alone)
    "exact_qsg": True,          # also solve QSG's objective exactly (its hyper-parameters)
}

BINARY_METHODS = ("QSG-S2AUC", "SAMULT", "PNU-AUC")
ORDINAL_METHODS = ("QS3ORAO", "M-SAMULT", "M-PNU-AUC", "SVOREX")
QSG_METHODS = ("QSG-S2AUC", "QS3ORAO")
# The exact minimizer of each QSG method's objective, fitted with that method's hyper-parameters.
EXACT_OF = {"QSG-S2AUC": "QSG-S2AUC-exact", "QS3ORAO": "QS3ORAO-exact"}
BASELINE_KEYS = {"SAMULT": "samult", "PNU-AUC": "pnu_auc", "M-SAMULT": "m_samult",
                 "M-PNU-AUC": "m_pnu_auc", "SVOREX": "svorex"}
FIXED = {"qsg": dict(sigma=0.1, lam=1e-3, gamma=0.5), "samult": dict(lam=1e-3, sigma=0.1,
         gamma=0.5), "pnu_auc": dict(lam=1e-3, sigma=0.1, gamma=0.0),
         "svorex": dict(c=1.0, sigma=0.1)}
TOLERANCE = 0.01   # issue check: QSG within this of the better exact method


def is_qsg(method):
  return method in QSG_METHODS


def grid_for(method, args):
  """The CV grid of a method; the quick grid shares its lam and sigma values across methods."""
  key = BASELINE_KEYS.get(method)
  step_size = np.asarray(args.get("cv_step_size") or [args["step_size"]], np.float64)
  if args["cv_grid"] == "paper":
    return (dict(model_selection.paper_grid(), step_size=step_size) if key is None else
            baselines.paper_grid(key))
  lam, sigma, gamma = (np.asarray(args[name], np.float64) for name in ("cv_lam", "cv_sigma",
                                                                        "cv_gamma"))
  if key is None:
    return {"lam": lam, "sigma": sigma, "gamma": gamma, "step_size": step_size}
  if key == "svorex":
    return {"c": np.asarray(args["cv_c"], np.float64), "sigma": sigma}
  if "pnu" in key:   # PNU-AUC's eta: PN weight 1 - |eta| as SAMULT's gamma, PU (+) or NU (-)
    gamma = np.unique(np.concatenate([1.0 - gamma, gamma - 1.0]))
  return {"lam": lam, "sigma": sigma, "gamma": gamma}


def merge_rare_classes(labels, min_count):
  """Labels 0..k'-1 after merging each class of fewer than ``min_count`` points into the
  smaller of its ordinal neighbours (repeatedly, never below two classes)."""
  y = np.asarray(labels).copy()
  while True:
    classes, counts = np.unique(y, return_counts=True)
    if counts.min() >= min_count or classes.size <= 2:
      return np.unique(y, return_inverse=True)[1]
    i = int(np.argmin(counts))
    neighbours = [j for j in (i - 1, i + 1) if 0 <= j < classes.size]
    j = min(neighbours, key=lambda j: counts[j])
    y[y == classes[i]] = classes[j]


def select_hyperparams(method, cv_data, k, args):
  """(keyword arguments for the method's fit, CV record) for one dataset."""
  x_l, y_l, x_u = cv_data
  key = BASELINE_KEYS.get(method)
  if args["cv_grid"] == "fixed":
    best = dict(FIXED["qsg" if key is None else key.replace("m_", "")], **(
        {"step_size": args["step_size"]} if key is None else {}))
    return best, {"method": method, "cv": "fixed", "best": best}
  y_cv = merge_rare_classes(y_l, args["cv_folds"])
  merged = int(y_cv.max()) + 1 < k
  folds = min(args["cv_folds"], int(np.bincount(y_cv).min()))
  grid = grid_for(method, args)
  start = time.perf_counter()
  if key is None:
    result = model_selection.cross_validate(
        x_l, y_cv, x_u, grid=grid, num_folds=folds, seed=args["cv_seed"], key=args["cv_seed"],
        num_steps=args["num_steps"], num_frequencies=args["num_frequencies"],
        unlabeled_batch_size=args["unlabeled_batch_size"])
  else:
    result = baselines.cross_validate(key, x_l, y_cv, x_u, grid=grid, num_folds=folds,
                                      seed=args["cv_seed"], per_split=not merged)
  seconds = time.perf_counter() - start
  record = {"method": method, "cv": args["cv_grid"], "best": result.best,
            "best_score": result.best_score, "num_folds": folds, "merged_classes": merged,
            "cv_classes": int(y_cv.max()) + 1, "seconds": seconds,
            "grid": {name: values.tolist() for name, values in result.grid.items()}}
  return dict(result.best), record


def scored_auc(scores, labels, num_classes):
  """(Mean AUC over the splits with both sides among ``labels``, number of those splits).

  Eq. 2 averages the k-1 split AUCs. A split with an empty side among the evaluation points (a
  rare class whose points all landed among the labeled ones, as happens on ESL) has no AUC: it
  is left out of the mean and the count says how many splits were scored.
  """
  labels = np.asarray(labels)
  per_split = baselines.split_aucs(scores, labels, num_classes)
  defined = np.array([np.any(labels > j) and np.any(labels <= j)
                      for j in range(num_classes - 1)])
  if not defined.any():
    return float("nan"), 0
  return float(np.mean(per_split[defined])), int(defined.sum())


def fit_and_score(method, best, k, train, evals, args, key):
  """Fits one method; returns ([(AUC, splits scored) per eval set], seconds, status)."""
  x_l, y_l, x_u = train
  start = time.perf_counter()
  try:
    if method in EXACT_OF.values():
      params = {name: best[name] for name in ("lam", "sigma", "gamma")}
      model = baselines.fit_exact_qsg(x_l, y_l, x_u, num_classes=k, **params)
      score = lambda x: baselines.decision_function(model, x)
    elif is_qsg(method):
      model = qsg_jax.fit(x_l, y_l, x_u, key=key, num_classes=k, num_steps=args["num_steps"],
                          num_frequencies=args["num_frequencies"],
                          unlabeled_batch_size=args["unlabeled_batch_size"], **best)
      jax.block_until_ready(model.model.coef)
      score = lambda x: qsg_jax.decision_function(model, x)
    else:
      key_name = BASELINE_KEYS[method]
      extra = {} if key_name in ("samult", "pnu_auc") else {"num_classes": k}
      model = baselines.FIT_FUNCTIONS[key_name](x_l, y_l, x_u, **best, **extra)
      score = lambda x: baselines.decision_function(model, x)
    seconds = time.perf_counter() - start
    return [scored_auc(score(x), y, k) for x, y in evals], seconds, "ok"
  except memory.InsufficientMemoryError:
    status = "out of memory"
  except qsg_jax.DivergenceError:
    status = "diverged"
  except FloatingPointError:
    status = "non-finite solution"
  return [(float("nan"), 0)] * len(evals), time.perf_counter() - start, status


def run_dataset(name, args, log=print):
  """Per-trial rows and the CV records of one dataset."""
  dataset = data_lib.load(name, data_dir=args["data_dir"])
  proto = protocols.protocol_for(dataset, args["num_labeled"])
  k, ordinal = proto.num_classes, proto.eval_on == "unlabeled"
  methods = ORDINAL_METHODS if k > 2 or ordinal else BINARY_METHODS
  qsg_method = next(m for m in methods if is_qsg(m))
  cv_trial = protocols.make_trial(dataset, proto, args["cv_seed"], eval_size=1)
  cv_u = cv_trial.x_unlabeled[np.random.default_rng(args["cv_seed"]).permutation(
      cv_trial.x_unlabeled.shape[0])[:args["cv_unlabeled"]]]
  cv_data = (cv_trial.x_labeled, cv_trial.y_labeled, cv_u)
  log(f"\n{name}: {dataset.x.shape[0]} points, d={dataset.x.shape[1]}, k={k}, "
      f"{proto.num_labeled} labeled; CV ({args['cv_grid']}) on {cv_u.shape[0]} unlabeled")
  chosen, records = {}, []
  for method in methods:
    chosen[method], record = select_hyperparams(method, cv_data, k, args)
    records.append(dict(record, dataset=name))
    log(f"  CV {method}: {chosen[method]} (CV AUC {record.get('best_score', float('nan')):.4f}, "
        f"{record.get('seconds', 0.0):.0f} s)")
  if args["exact_qsg"]:
    methods = methods[:1] + (EXACT_OF[qsg_method],) + methods[1:]
    chosen[EXACT_OF[qsg_method]] = chosen[qsg_method]
  rows = []
  for t in range(args["trials"]):
    seed = args["seed"] + t
    trial = protocols.make_trial(dataset, proto, seed,
                                 eval_size=None if ordinal else args["eval_size"])
    n_u = trial.x_unlabeled.shape[0]
    order = np.random.default_rng([seed, 2]).permutation(n_u)
    common = order[:min(args["common_size"], n_u)]
    if ordinal:   # make_trial scored all unlabeled points: y_eval are their labels
      y_u = trial.y_eval
      evals = {"common": (trial.x_unlabeled[common], y_u[common]),
               "full": (trial.x_unlabeled[order[:args["eval_size"]]],
                        y_u[order[:args["eval_size"]]])}
    else:
      evals = {"common": (trial.x_eval, trial.y_eval), "full": (trial.x_eval, trial.y_eval)}
    sizes = {"common": common.size, "full": n_u}
    unlabeled = {"common": trial.x_unlabeled[common], "full": trial.x_unlabeled}
    settings = ["common"] + (["full"] if args["full"] and n_u > common.size else [])
    for method in methods:
      runs = settings if is_qsg(method) else ["common"]
      for setting in runs:
        evaluate = settings if method == "SVOREX" else [setting]
        aucs, seconds, status = fit_and_score(
            method, chosen[method], k, (trial.x_labeled, trial.y_labeled, unlabeled[setting]),
            [evals[s] for s in evaluate], args, seed)
        for s, (auc, scored) in zip(evaluate, aucs):
          rows.append({"dataset": name, "trial": t, "seed": seed, "method": method,
                       "setting": s, "num_unlabeled": sizes[s] if method != "SVOREX" else 0,
                       "num_eval": int(evals[s][0].shape[0]), "auc": auc,
                       "splits_scored": scored, "num_splits": k - 1,
                       "train_time_s": seconds, "status": status})
    mine = [r for r in rows if r["trial"] == t]
    line = ", ".join(f"{r['method']}[{r['setting']}] {r['auc']:.4f}" for r in mine)
    fewest = min((r["splits_scored"] for r in mine if r["status"] == "ok"), default=k - 1)
    if fewest < k - 1:
      line += (f" (mean over {fewest} of {k - 1} splits: a class is missing from the "
               "evaluation points)")
    log(f"  trial {t + 1}/{args['trials']}: {line}")
  return rows, records


def summarize(rows):
  """Mean and std of the AUC per (dataset, method, setting) over the trials that ran."""
  out = []
  for key in dict.fromkeys((r["dataset"], r["method"], r["setting"]) for r in rows):
    mine = [r for r in rows if (r["dataset"], r["method"], r["setting"]) == key]
    ok = [r for r in mine if r["status"] == "ok"]
    auc = reporting.mean_std([r["auc"] for r in ok])
    seconds = reporting.mean_std([r["train_time_s"] for r in ok])
    sizes = {r["num_unlabeled"] for r in mine}
    scored = sorted({r["splits_scored"] for r in ok})
    out.append({"dataset": key[0], "method": key[1], "setting": key[2],
                "num_unlabeled": "0 (supervised)" if sizes == {0} else "/".join(
                    str(s) for s in sorted(sizes)),
                "auc_mean": auc[0], "auc_std": auc[1], "trials_ok": f"{len(ok)}/{len(mine)}",
                "splits_scored": ("/".join(str(v) for v in scored) +
                                  f" of {mine[0]['num_splits']}"),
                "train_time_s": seconds[0], "num_eval": mine[0]["num_eval"]})
  return out


def closeness_checks(summary):
  """Per dataset: QSG mean AUC at the common size minus the better exact method's (>= -0.01),
  and, when it ran, minus the exact minimizer of QSG's own objective.

  The means are over the trials that ran; a QSG trial that diverged (or failed otherwise) fails
  the check whatever the mean of the others.
  """
  out = []
  for name in dict.fromkeys(s["dataset"] for s in summary):
    mine = {(s["method"], s["setting"]): s["auc_mean"] for s in summary if s["dataset"] == name}
    qsg_row = next(s for s in summary
                   if s["dataset"] == name and is_qsg(s["method"]) and s["setting"] == "common")
    qsg, qsg_ok = qsg_row["auc_mean"], qsg_row["trials_ok"]
    ran, total = (int(v) for v in qsg_ok.split("/"))
    exact = {m: v for (m, s), v in mine.items() if m in BASELINE_KEYS and m != "SVOREX"}
    if not exact or not np.isfinite(list(exact.values())).any():
      continue
    better = max((m for m in exact if np.isfinite(exact[m])), key=lambda m: exact[m])
    full = mine.get((next(m for m, _ in mine if is_qsg(m)), "full"), float("nan"))
    own = next((v for (m, s), v in mine.items() if m in EXACT_OF.values()), float("nan"))
    out.append({"dataset": name, "qsg_common": qsg, "better_exact": better,
                "exact_auc": exact[better], "difference": qsg - exact[better],
                "within_0.01": bool(ran == total and qsg >= exact[better] - TOLERANCE),
                "qsg_trials_ok": qsg_ok, "qsg_all_trials_ok": ran == total, "qsg_full": full,
                "qsg_exact_objective": own, "qsg_minus_its_exact": qsg - own,
                "its_exact_minus_better_exact": own - exact[better]})
  return out


def supervised_checks(rows):
  """QS3ORAO minus SVOREX, paired over trials, for each evaluation setting (claim (c))."""
  out = []
  for name in dict.fromkeys(r["dataset"] for r in rows if r["method"] == "SVOREX"):
    for setting in ("common", "full"):
      pick = lambda m: {r["trial"]: r["auc"] for r in rows if r["dataset"] == name and
                        r["method"] == m and r["setting"] == setting and r["status"] == "ok"}
      semi, sup = pick("QS3ORAO"), pick("SVOREX")
      trials = sorted(set(semi) & set(sup))
      if not trials:
        continue
      diff = [semi[t] - sup[t] for t in trials]
      mean, std, se = reporting.mean_std(diff)
      out.append({"dataset": name, "setting": setting, "qs3orao": float(np.mean(
          [semi[t] for t in trials])), "svorex": float(np.mean([sup[t] for t in trials])),
                  "mean_difference": mean, "std_difference": std, "stderr": se,
                  "qs3orao_wins": f"{sum(d > 0 for d in diff)}/{len(diff)}"})
  return out


def plot(rows, path):
  """Box plot of the AUC per dataset (one panel each), one box per method and setting."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  names = list(dict.fromkeys(r["dataset"] for r in rows))
  cols = min(3, len(names))
  nrows = -(-len(names) // cols)
  fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.6 * nrows), squeeze=False)
  for ax, name in zip(axes.ravel(), names):
    mine = [r for r in rows if r["dataset"] == name and r["status"] == "ok"]
    keys = list(dict.fromkeys((r["method"], r["setting"]) for r in mine))
    values = [[r["auc"] for r in mine if (r["method"], r["setting"]) == key] for key in keys]
    sizes = {s: max((r["num_unlabeled"] for r in mine if r["setting"] == s), default=0)
             for s in ("common", "full")}
    labels = [f"{m}\n{'n_u=' + str(sizes[s]) if s == 'common' else 'full'}" for m, s in keys]
    ax.boxplot(values)
    ax.set_xticks(range(1, len(keys) + 1), labels, fontsize=7)
    ax.set_title(name)
    binary = BINARY_METHODS + (EXACT_OF["QSG-S2AUC"],)
    ax.set_ylabel("AUC" if all(m in binary for m, _ in keys) else "ordinal AUC")
  for ax in axes.ravel()[len(names):]:
    ax.axis("off")
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def run_comparison(datasets, *, output_dir, log=print, **settings):
  """Runs every dataset and writes auc_comparison.{json,md,csv,png} into ``output_dir``.

  Args:
    datasets: names for ``qsg_jax.data.load``; a real dataset whose files are missing (and cannot
      be downloaded) is skipped with a message, and listed under "skipped" in the outputs.
    output_dir: directory of the outputs (created).
    log: callable(str) for progress lines.
    **settings: overrides of ``DEFAULT_SETTINGS`` (same names).

  Returns:
    The JSON payload (dict with "summary", "closeness", "supervised", "rows", ...).

  Raises:
    ValueError: an unknown setting, or no dataset could be run.
  """
  unknown = sorted(set(settings) - set(DEFAULT_SETTINGS))
  if unknown:
    raise ValueError(f"unknown settings {unknown}; expected some of {sorted(DEFAULT_SETTINGS)}.")
  if settings.get("cv_grid", "quick") not in ("quick", "paper", "fixed"):
    raise ValueError(f"cv_grid must be 'quick', 'paper' or 'fixed'; received "
                     f"{settings['cv_grid']!r}.")
  args = dict(DEFAULT_SETTINGS, **settings)
  for name in ("cv_lam", "cv_sigma", "cv_gamma", "cv_c"):
    args[name] = [float(v) for v in args[name]]
  log(f"settings: {args}; devices {jax.devices()}")
  rows, records, skipped = [], [], []
  for name in datasets:
    try:
      more_rows, more_records = run_dataset(name, args, log)
    except data_lib.DataNotFoundError as e:
      skipped.append({"dataset": name, "reason": str(e).splitlines()[0]})
      log(f"\n{name}: SKIPPED, data files not found ({skipped[-1]['reason']})")
      continue
    rows += more_rows
    records += more_records
  if not rows:
    raise ValueError(f"no dataset of {list(datasets)} could be run: {skipped}")
  summary = summarize(rows)
  closeness = closeness_checks(summary)
  supervised = supervised_checks(rows)
  log("\nmean AUC (std) over trials:")
  for s in summary:
    log(f"  {s['dataset']:>13} {s['method']:>10} {s['setting']:>6} (n_u {s['num_unlabeled']}):"
        f" {s['auc_mean']:.4f} ({s['auc_std']:.4f}), {s['trials_ok']} trials ok, "
        f"{s['splits_scored']} splits scored")
  log(f"\ncheck (a): QSG at the common size within {TOLERANCE} of the better exact method:")
  for c in closeness:
    log(f"  {c['dataset']}: QSG {c['qsg_common']:.4f} vs {c['better_exact']} "
        f"{c['exact_auc']:.4f}: difference {c['difference']:+.4f} "
        f"({'pass' if c['within_0.01'] else 'FAIL'}"
        + (f"; QSG ran in only {c['qsg_trials_ok']} trials, the others diverged or failed"
           if not c["qsg_all_trials_ok"] else "")
        + "); QSG on the full set "
        + (f"{c['qsg_full']:.4f}" if np.isfinite(c["qsg_full"]) else "not run"))
    if np.isfinite(c["qsg_exact_objective"]):
      log(f"    exact minimizer of QSG's objective {c['qsg_exact_objective']:.4f}: QSG minus it "
          f"{c['qsg_minus_its_exact']:+.4f} (approximation), it minus {c['better_exact']} "
          f"{c['its_exact_minus_better_exact']:+.4f} (model class)")
  if supervised:
    log("\ncheck (c): QS3ORAO minus supervised SVOREX, paired over trials:")
  for c in supervised:
    log(f"  {c['dataset']} [{c['setting']}]: {c['mean_difference']:+.4f} +- "
        f"{c['std_difference']:.4f} (std), QS3ORAO better in {c['qs3orao_wins']} trials")
  for s in skipped:
    log(f"skipped {s['dataset']}: {s['reason']}")
  columns = ["dataset", "method", "setting", "num_unlabeled", "auc_mean", "auc_std",
             "trials_ok", "splits_scored", "train_time_s", "num_eval"]
  payload = {"settings": args, "cv": records, "summary": summary, "closeness": closeness,
             "supervised": supervised, "skipped": skipped, "rows": rows}
  paths = reporting.write_results(output_dir, "auc_comparison", payload, rows=summary,
                                  columns=columns, title="AUC over trials (mean and std)")
  with open(paths["md"], "a") as f:
    f.write(f"\n## QSG vs the better exact method at the common size (check: >= -{TOLERANCE})"
            "\n\n" + reporting.markdown_table(closeness))
    if supervised:
      f.write("\n## QS3ORAO minus SVOREX (paired over trials)\n\n" +
              reporting.markdown_table(supervised))
    f.write("\n## Hyper-parameters chosen by cross-validation\n\n" + reporting.markdown_table(
        [{"dataset": r["dataset"], "method": r["method"], "cv": r["cv"], "best": str(r["best"]),
          "cv_auc": r.get("best_score"), "folds": r.get("num_folds"),
          "seconds": r.get("seconds")} for r in records]))
    if skipped:
      f.write("\n## Skipped (data files not found)\n\n" + reporting.markdown_table(skipped))
  png = f"{output_dir}/auc_comparison.png"
  plot(rows, png)
  log(f"wrote {paths['json']}, {paths['md']}, {paths['csv']} and {png}")
  return payload


def _define_flags():
  """Flags are defined only when run as a script, so tests can import this module freely."""
  flags.DEFINE_list("datasets", list(DEFAULT_DATASETS), "Datasets (binary ones run the binary "
                    "methods, others the ordinal); missing real data files are skipped.")
  flags.DEFINE_string("data_dir", None, "Data directory (default $QSG_JAX_DATA).")
  flags.DEFINE_integer("trials", 10, "Trials (random splits) per dataset.")
  flags.DEFINE_integer("num_labeled", None, "Labeled points (default 200 binary, 500 ordinal, "
                       "at most half the data).")
  flags.DEFINE_integer("seed", 0, "Seed of trial 0; trial t uses seed + t.")
  flags.DEFINE_integer("common_size", 5000, "Unlabeled points every method trains on (the exact "
                       "methods' size).")
  flags.DEFINE_bool("full", True, "Also run QSG on the whole unlabeled set.")
  flags.DEFINE_integer("eval_size", 20000, "Score on at most this many points.")
  flags.DEFINE_enum("cv_grid", "quick", ["quick", "paper", "fixed"], "Grid of the "
                    "cross-validation (fixed: no CV, the settings of FIXED).")
  flags.DEFINE_list("cv_lam", ["0.001", "0.125"], "lam values of the quick grid.")
  flags.DEFINE_list("cv_sigma", ["0.125", "1.0"], "sigma values of the quick grid.")
  flags.DEFINE_list("cv_gamma", ["0.0", "0.5", "1.0"], "gamma values of the quick grid (PNU-AUC "
                    "searches eta = +-(1 - gamma): same PN weights).")
  flags.DEFINE_list("cv_c", ["1.0", "8.0"], "SVOREX C values of the quick grid.")
  flags.DEFINE_integer("cv_unlabeled", 1000, "Unlabeled points used in CV.")
  flags.DEFINE_integer("cv_folds", 5, "Folds of the cross-validation.")
  flags.DEFINE_integer("cv_seed", 1000, "Seed of the split used for CV (not a trial).")
  flags.DEFINE_integer("num_steps", 1024, "QSG iterations T.")
  flags.DEFINE_integer("num_frequencies", 32, "QSG frequencies per block.")
  flags.DEFINE_integer("unlabeled_batch_size", 128, "QSG unlabeled points per step.")
  flags.DEFINE_float("step_size", 3.0, "QSG initial step eta0 (the CV's only value unless "
                     "--cv_step_size).")
  flags.DEFINE_list("cv_step_size", None, "eta0 values the CV searches for QSG, for example 1,3 "
                    "(default: --step_size alone; the papers do not search it).")
  flags.DEFINE_bool("exact_qsg", True, "Also solve QSG's own objective exactly in each trial, "
                    "with QSG's hyper-parameters (QS3ORAO-exact / QSG-S2AUC-exact).")
  flags.DEFINE_string("output_dir", "results/auc_comparison", "Output directory.")


def main(argv):
  del argv
  run_comparison(FLAGS.datasets, output_dir=FLAGS.output_dir,
                 log=lambda line: print(line, flush=True),
                 **{name: FLAGS[name].value for name in DEFAULT_SETTINGS})


if __name__ == "__main__":
  _define_flags()
  app.run(main)
