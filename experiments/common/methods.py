"""The compared methods: their grids, cross-validation, one fit, and the statistics of their rows.

QSG-S2AUC / QS3ORAO (``qsg_jax.fit``), the exact minimizer of QSG's own objective, and the
papers' exact baselines (SAMULT, PNU-AUC, their M- versions, SVOREX). ``select_hyperparams``
chooses one setting per dataset and method by k-fold cross-validation (or takes ``FIXED``);
``fit_and_score`` trains one method on one trial and scores it, turning a divergence or an
out-of-memory failure into a status instead of an exception. ``summarize``,
``closeness_checks`` and ``supervised_checks`` turn the per-trial rows into the tables of
``experiments.auc_comparison``; ``plot`` draws the papers' Figure 2 box plots.

``settings`` below is any object with the attributes of ``auc_comparison.Settings`` that a
function reads (cv_grid, cv_lam, ..., num_steps, step_size).
"""

import time

import jax
import numpy as np

import qsg_jax
from qsg_jax import baselines
from qsg_jax import memory
from qsg_jax import model_selection
from experiments.common import reporting

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
TOLERANCE = 0.01   # QSG counts as close when within this of the better exact method


def is_qsg(method):
  return method in QSG_METHODS


def grid_for(method, settings):
  """The CV grid of a method; the quick grid shares its lam and sigma values across methods."""
  key = BASELINE_KEYS.get(method)
  step_size = list(settings.cv_step_size or [settings.step_size])
  if settings.cv_grid == "paper":
    return (dict(model_selection.paper_grid(), step_size=step_size) if key is None else
            baselines.paper_grid(key))
  lam, sigma, gamma = (np.asarray(v, np.float64) for v in (settings.cv_lam, settings.cv_sigma,
                                                            settings.cv_gamma))
  if key is None:
    return {"lam": lam, "sigma": sigma, "gamma": gamma, "step_size": step_size}
  if key == "svorex":
    return {"c": np.asarray(settings.cv_c, np.float64), "sigma": sigma}
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


def select_hyperparams(method, cv_data, k, settings):
  """(keyword arguments for the method's fit, CV record) for one dataset."""
  x_l, y_l, x_u = cv_data
  key = BASELINE_KEYS.get(method)
  if settings.cv_grid == "fixed":
    best = dict(FIXED["qsg" if key is None else key.replace("m_", "")], **(
        {"step_size": settings.step_size} if key is None else {}))
    return best, {"method": method, "cv": "fixed", "best": best}
  y_cv = merge_rare_classes(y_l, settings.cv_folds)
  merged = int(y_cv.max()) + 1 < k
  folds = min(settings.cv_folds, int(np.bincount(y_cv).min()))
  grid = grid_for(method, settings)
  start = time.perf_counter()
  if key is None:
    result = model_selection.cross_validate(
        x_l, y_cv, x_u, grid=grid, num_folds=folds, seed=settings.cv_seed, key=settings.cv_seed,
        num_steps=settings.num_steps, num_frequencies=settings.num_frequencies,
        unlabeled_batch_size=settings.unlabeled_batch_size,
        # The ordinal paper searches gamma per subproblem: after the grid, one coordinate pass.
        per_split_gamma=settings.cv_grid == "paper" and not merged)
  else:
    result = baselines.cross_validate(key, x_l, y_cv, x_u, grid=grid, num_folds=folds,
                                      seed=settings.cv_seed, per_split=not merged,
                                      mode=settings.cv_baseline_mode)
  record = {"method": method, "cv": settings.cv_grid, "best": result.best,
            "best_score": result.best_score, "num_folds": folds, "merged_classes": merged,
            "cv_classes": int(y_cv.max()) + 1, "seconds": time.perf_counter() - start,
            "solver": "qsg grouped" if key is None else settings.cv_baseline_mode,
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


def fit_and_score(method, best, k, train, evals, settings, key):
  """Fits one method; returns ([(AUC, splits scored) per eval set], seconds, status)."""
  x_l, y_l, x_u = train
  start = time.perf_counter()
  try:
    if method in EXACT_OF.values():
      params = {name: best[name] for name in ("lam", "sigma", "gamma")}
      model = baselines.fit_exact_qsg(x_l, y_l, x_u, num_classes=k, **params)
      score = lambda x: baselines.decision_function(model, x)
    elif is_qsg(method):
      model = qsg_jax.fit(x_l, y_l, x_u, key=key, num_classes=k, num_steps=settings.num_steps,
                          num_frequencies=settings.num_frequencies,
                          unlabeled_batch_size=settings.unlabeled_batch_size, **best)
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


def summarize(rows):
  """Mean and std of the AUC per (dataset, method, setting) over the trials that ran."""
  out = []
  for key in dict.fromkeys((r["dataset"], r["method"], r["setting"]) for r in rows):
    mine = [r for r in rows if (r["dataset"], r["method"], r["setting"]) == key]
    ok = [r for r in mine if r["status"] == "ok"]
    auc = reporting.mean_std([r["auc"] for r in ok])
    sizes = {r["num_unlabeled"] for r in mine}
    scored = sorted({r["splits_scored"] for r in ok})
    out.append({"dataset": key[0], "method": key[1], "setting": key[2],
                "num_unlabeled": "0 (supervised)" if sizes == {0} else "/".join(
                    str(s) for s in sorted(sizes)),
                "auc_mean": auc[0], "auc_std": auc[1], "trials_ok": f"{len(ok)}/{len(mine)}",
                "splits_scored": ("/".join(str(v) for v in scored) +
                                  f" of {mine[0]['num_splits']}"),
                "train_time_s": reporting.mean_std([r["train_time_s"] for r in ok])[0],
                "num_eval": mine[0]["num_eval"]})
  return out


def closeness_checks(summary):
  """Per dataset: QSG mean AUC at the common size minus the better exact method's (>= -0.01),
  and, when it ran, minus the exact minimizer of QSG's own objective.

  The means are over the trials that ran; a QSG trial that diverged (or failed otherwise) fails
  the comparison whatever the mean of the others.
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
  """QS3ORAO minus SVOREX, paired over trials, for each evaluation setting."""
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


def report_lines(summary, closeness, supervised):
  """The printed summary: mean AUC per method and setting, then the two comparisons."""
  lines = ["\nmean AUC (std) over trials:"]
  for s in summary:
    lines.append(f"  {s['dataset']:>13} {s['method']:>10} {s['setting']:>6} "
                 f"(n_u {s['num_unlabeled']}): {s['auc_mean']:.4f} ({s['auc_std']:.4f}), "
                 f"{s['trials_ok']} trials ok, {s['splits_scored']} splits scored")
  lines.append(f"\nQSG at the common size within {TOLERANCE} of the better exact method:")
  for c in closeness:
    lines.append(
        f"  {c['dataset']}: QSG {c['qsg_common']:.4f} vs {c['better_exact']} "
        f"{c['exact_auc']:.4f}: difference {c['difference']:+.4f} "
        f"({'yes' if c['within_0.01'] else 'NO'}"
        + (f"; QSG ran in only {c['qsg_trials_ok']} trials, the others diverged or failed"
           if not c["qsg_all_trials_ok"] else "")
        + "); QSG on the full set "
        + (f"{c['qsg_full']:.4f}" if np.isfinite(c["qsg_full"]) else "not run"))
    if np.isfinite(c["qsg_exact_objective"]):
      lines.append(f"    exact minimizer of QSG's objective {c['qsg_exact_objective']:.4f}: QSG "
                   f"minus it {c['qsg_minus_its_exact']:+.4f} (approximation), it minus "
                   f"{c['better_exact']} {c['its_exact_minus_better_exact']:+.4f} (model class)")
  if supervised:
    lines.append("\nQS3ORAO minus supervised SVOREX, paired over trials:")
  for c in supervised:
    lines.append(f"  {c['dataset']} [{c['setting']}]: {c['mean_difference']:+.4f} +- "
                 f"{c['std_difference']:.4f} (std), QS3ORAO better in {c['qs3orao_wins']} "
                 "trials")
  return lines


def plot(rows, path):
  """Box plot of the AUC per dataset (one panel each), one box per method and setting."""
  plt = reporting.pyplot()
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
  return reporting.save_figure(fig, path)
