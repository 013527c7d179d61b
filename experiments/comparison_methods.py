"""The methods of ``experiments.auc_comparison``: their grids, cross-validation and one fit.

QSG-S2AUC / QS3ORAO (``qsg_jax.fit``), the exact minimizer of QSG's own objective, and the
papers' exact baselines (SAMULT, PNU-AUC, their M- versions, SVOREX). ``select_hyperparams``
chooses one setting per dataset and method by k-fold cross-validation (or takes ``FIXED``);
``fit_and_score`` trains one method on one trial and scores it, turning a divergence or an
out-of-memory failure into a status instead of an exception.
"""

import time

import jax
import numpy as np

import qsg_jax
from qsg_jax import baselines
from qsg_jax import memory
from qsg_jax import model_selection

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


def is_qsg(method):
  return method in QSG_METHODS


def grid_for(method, args):
  """The CV grid of a method; the quick grid shares its lam and sigma values across methods."""
  key = BASELINE_KEYS.get(method)
  step_size = [v if v == "auto" else float(v)   # numbers, or the library's "auto" rule
               for v in (args.get("cv_step_size") or [args["step_size"]])]
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
        unlabeled_batch_size=args["unlabeled_batch_size"],
        # The ordinal paper searches gamma per subproblem: after the grid, one coordinate pass.
        per_split_gamma=args["cv_grid"] == "paper" and not merged)
  else:
    result = baselines.cross_validate(key, x_l, y_cv, x_u, grid=grid, num_folds=folds,
                                      seed=args["cv_seed"], per_split=not merged,
                                      mode=args["cv_baseline_mode"])
  seconds = time.perf_counter() - start
  record = {"method": method, "cv": args["cv_grid"], "best": result.best,
            "best_score": result.best_score, "num_folds": folds, "merged_classes": merged,
            "cv_classes": int(y_cv.max()) + 1, "seconds": seconds,
            "solver": "qsg grouped" if key is None else args["cv_baseline_mode"],
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
