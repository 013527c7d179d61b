r"""Does the default step ("auto") converge where eta0 in {1, 3, 10} does, at no loss of AUC?

  QSG_JAX_DATA=../shared/data nice python -m experiments.select_step --datasets=skin_nonskin,sgemm

For each dataset, on the papers' protocol (``experiments.protocols``):
  1. the whole paper grid (539 points x 5 folds) by the grouped CV of trial 0 (--cv_unlabeled
     unlabeled points), with the step grid {"auto", 1, 3, 10}: how many of the 2,695 tasks
     diverged for each step value (every grid point the CV can choose), and the (lam, sigma,
     gamma) the CV picks with "auto";
  2. --num_trials trials at those hyper-parameters, trained on --num_unlabeled unlabeled points
     and scored on --eval_size evaluation points, with step "auto" and eta0 = 1, 3, 10: AUC per
     trial or "div" (``DivergenceError``), and the gap of "auto" to the best converging eta0.
Prints one table per dataset and writes results/select_step/<dataset>.json.
"""

import json
import os

from absl import app
from absl import flags
import numpy as np

from experiments import protocols
from qsg_jax import data as data_lib
from qsg_jax import metrics
from qsg_jax import model_selection
from qsg_jax import training
from qsg_jax.errors import DivergenceError

_DATASETS = flags.DEFINE_list("datasets", ["skin_nonskin", "sgemm"], "datasets")
_NUM_TRIALS = flags.DEFINE_integer("num_trials", 10, "trials per dataset")
_NUM_UNLABELED = flags.DEFINE_integer("num_unlabeled", 2000, "unlabeled training points")
_CV_UNLABELED = flags.DEFINE_integer("cv_unlabeled", 1000, "unlabeled points of the CV")
_EVAL_SIZE = flags.DEFINE_integer("eval_size", 2000, "evaluation points per trial")
_NUM_STEPS = flags.DEFINE_integer("num_steps", 1024, "T")
_SKIP_GRID = flags.DEFINE_bool("skip_grid", False, "skip the full-grid divergence count")
_OUTPUT_DIR = flags.DEFINE_string("output_dir", "results/select_step", "output directory")
_DATA_DIR = flags.DEFINE_string("data_dir", None, "data directory (default $QSG_JAX_DATA)")

STEPS = ("auto", 1.0, 3.0, 10.0)


def _subsample(x, size, seed):
  if x.shape[0] <= size:
    return x
  return x[np.random.default_rng([seed, 2]).choice(x.shape[0], size, replace=False)]


def study(name, num_trials, num_unlabeled, cv_unlabeled, eval_size, num_steps, skip_grid=False,
          data_dir=None):
  """The divergence counts over the grid and the trials' AUCs of one dataset (a dict)."""
  dataset = data_lib.load(name, data_dir=data_dir)
  proto = protocols.protocol_for(dataset)
  k = proto.num_classes
  trial0 = protocols.make_trial(dataset, proto, 0, eval_size=1)
  x_u0 = _subsample(trial0.x_unlabeled, cv_unlabeled, 0)
  out = {"dataset": name, "k": k, "num_steps": num_steps}
  grid = model_selection.paper_grid(list(STEPS) if not skip_grid else "auto")
  cv = model_selection.cross_validate(trial0.x_labeled, trial0.y_labeled, x_u0, grid=grid,
                                      num_classes=k, num_steps=num_steps)
  diverged = np.isnan(cv.fold_scores).all(axis=-1)              # [lam, sigma, gamma, step, F]
  out["grid_diverged_tasks"] = {str(s): int(diverged[..., i, :].sum())
                                for i, s in enumerate(cv.grid["step_size"])}
  auto = list(cv.grid["step_size"]).index("auto")
  target = np.nanmean(cv.scores[..., auto, :], axis=-1)
  index = np.unravel_index(np.nanargmax(target), target.shape)
  best = {"lam": float(cv.grid["lam"][index[0]]), "sigma": float(cv.grid["sigma"][index[1]]),
          "gamma": float(cv.grid["gamma"][index[2]])}
  out["best"], out["best_cv_auc"] = best, float(target[index])
  rows = []
  for seed in range(num_trials):
    trial = protocols.make_trial(dataset, proto, seed, eval_size=eval_size)
    x_u = _subsample(trial.x_unlabeled, num_unlabeled, seed)
    row = {}
    for step in STEPS:
      try:
        fitted = training.fit(trial.x_labeled, trial.y_labeled, x_u, key=seed, num_classes=k,
                              step_size=step, num_steps=num_steps, **best)
        scores = training.decision_function(fitted, trial.x_eval)
        row[str(step)] = float(metrics.ordinal_auc(scores, trial.y_eval, k))
        if step == "auto":
          row["auto_eta0"] = float(fitted.metrics["eta"][0])
      except DivergenceError:
        row[str(step)] = None
    rows.append(row)
    print(name, seed, {key: (round(v, 4) if v is not None else "div") for key, v in row.items()},
          flush=True)
  out["trials"] = rows
  mean = lambda s: (None if any(r[str(s)] is None for r in rows)
                    else float(np.mean([r[str(s)] for r in rows])))
  out["mean_auc"] = {str(s): mean(s) for s in STEPS}
  out["diverged_trials"] = {str(s): sum(r[str(s)] is None for r in rows) for s in STEPS}
  converging = [v for s, v in out["mean_auc"].items() if s != "auto" and v is not None]
  out["auto_minus_best_fixed"] = (None if not converging or out["mean_auc"]["auto"] is None
                                  else out["mean_auc"]["auto"] - max(converging))
  return out


def main(argv):
  del argv
  os.makedirs(_OUTPUT_DIR.value, exist_ok=True)
  for name in _DATASETS.value:
    out = study(name, _NUM_TRIALS.value, _NUM_UNLABELED.value, _CV_UNLABELED.value,
                _EVAL_SIZE.value, _NUM_STEPS.value, _SKIP_GRID.value, _DATA_DIR.value)
    with open(os.path.join(_OUTPUT_DIR.value, f"{name}.json"), "w") as f:
      json.dump(out, f, indent=1)
    print(f"{name}: CV pick {out['best']} (CV AUC {out['best_cv_auc']:.4f}); diverged grid tasks "
          f"of 2695 per step: {out['grid_diverged_tasks']}")
    print(f"  {len(out['trials'])} trials: mean AUC {out['mean_auc']}; diverged trials "
          f"{out['diverged_trials']}; auto - best converging fixed eta0 = "
          f"{out['auto_minus_best_fixed']}")


if __name__ == "__main__":
  app.run(main)
