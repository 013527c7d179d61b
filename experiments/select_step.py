r"""Does the default step ("auto") converge where eta0 in {1, 3, 10} does, at no loss of AUC?

  QSG_JAX_DATA=../shared/data nice python -m experiments.select_step --datasets=skin_nonskin,sgemm

For each dataset, on the papers' protocol (``experiments.protocols``), and each grid of
--grids ("paper": 539 points; "quick": 12 points, with lam = 1e-3 as in the skin failure):
  1. the whole grid x 5 folds by the grouped CV of trial 0 (--cv_unlabeled unlabeled points),
     with the step grid {"auto", 1, 3, 10}: how many tasks diverged for each step value (every
     grid point the CV can choose), and the (lam, sigma, gamma) the CV picks with "auto";
  2. --num_trials trials at those hyper-parameters, trained on --num_unlabeled unlabeled points
     and scored on --eval_size evaluation points, with step "auto" and eta0 = 1, 3, 10: AUC per
     trial or "div" (``DivergenceError``), and the gap of "auto" to the best converging eta0.
Prints one table per dataset and writes select_step.json (every dataset's record) into
--output_dir; each finished dataset is written at once to --output_dir/cells/select_step/, and
``--resume`` continues an interrupted run from them.
"""

import dataclasses
from typing import Optional

import numpy as np

import qsg_jax
from qsg_jax import data as data_lib
from qsg_jax import model_selection
from experiments.common import cli
from experiments.common import protocols
from experiments.common import store as store_lib

STEPS = ("auto", 1.0, 3.0, 10.0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The study's settings (one flag each)."""
  datasets: tuple[str, ...] = ("skin_nonskin", "sgemm")
  data_dir: Optional[str] = None
  output_dir: str = "results/select_step"
  num_trials: int = cli.setting(10, "Trials per dataset.", lower=1)
  num_unlabeled: int = cli.setting(2000, "Unlabeled training points.", lower=1)
  cv_unlabeled: int = cli.setting(1000, "Unlabeled points of the CV.", lower=1)
  eval_size: int = 2000
  num_steps: int = cli.setting(1024, "Iterations T.", lower=1)
  grids: tuple[str, ...] = cli.setting(("paper", "quick"), "CV grids whose pick is tested.",
                                       choices=("paper", "quick"), nonempty=True)


def _subsample(x, size, seed):
  if x.shape[0] <= size:
    return x
  return x[protocols.seed_rng(seed, "unlabeled_subset").choice(x.shape[0], size, replace=False)]


def _trials(dataset, proto, best, num_trials, num_unlabeled, eval_size, num_steps):
  """AUC per trial and step ("auto", 1, 3, 10) at ``best``; None where training diverged."""
  rows = []
  for seed in range(num_trials):
    trial = protocols.make_trial(dataset, proto, seed, eval_size=eval_size)
    x_u = _subsample(trial.x_unlabeled, num_unlabeled, seed)
    row = {}
    for step in STEPS:
      try:
        fitted = qsg_jax.fit(trial.x_labeled, trial.y_labeled, x_u, key=seed,
                             num_classes=proto.num_classes, step_size=step,
                             num_steps=num_steps, **best)
        scores = qsg_jax.decision_function(fitted, trial.x_eval)
        row[str(step)] = float(qsg_jax.ordinal_auc(scores, trial.y_eval, proto.num_classes))
        if step == "auto":
          row["auto_eta0"] = float(fitted.metrics["eta"][0])
      except qsg_jax.DivergenceError:
        row[str(step)] = None
    rows.append(row)
    cli.log_line(f"{dataset.name} {best} trial {seed}: " + ", ".join(
        f"{key} {'div' if v is None else round(v, 4)}" for key, v in row.items()))
  mean = lambda s: (None if any(r[str(s)] is None for r in rows)
                    else float(np.mean([r[str(s)] for r in rows])))
  out = {"trials": rows, "mean_auc": {str(s): mean(s) for s in STEPS},
         "diverged_trials": {str(s): sum(r[str(s)] is None for r in rows) for s in STEPS}}
  converging = [v for s, v in out["mean_auc"].items() if s != "auto" and v is not None]
  out["auto_minus_best_fixed"] = (None if not converging or out["mean_auc"]["auto"] is None
                                  else out["mean_auc"]["auto"] - max(converging))
  return out


def study(name, num_trials, num_unlabeled, cv_unlabeled, eval_size, num_steps,
          grids=("paper",), data_dir=None):
  """Per grid: the divergence counts over it, the CV pick and the trials' AUCs (a dict)."""
  dataset = data_lib.load(name, data_dir=data_dir)
  proto = protocols.protocol_for(dataset)
  k = proto.num_classes
  trial0 = protocols.make_trial(dataset, proto, 0, eval_size=1)
  x_u0 = _subsample(trial0.x_unlabeled, cv_unlabeled, 0)
  out = {"dataset": name, "k": k, "num_steps": num_steps}
  for grid_name in grids:
    make = model_selection.paper_grid if grid_name == "paper" else model_selection.quick_grid
    cv = model_selection.cross_validate(trial0.x_labeled, trial0.y_labeled, x_u0,
                                        grid=make(step_size=list(STEPS)), num_classes=k,
                                        num_steps=num_steps)
    diverged = np.isnan(cv.fold_scores).all(axis=-1)            # [lam, sigma, gamma, step, F]
    record = {"grid_tasks": int(diverged[..., 0, :].size),
              "grid_diverged_tasks": {str(s): int(diverged[..., i, :].sum())
                                      for i, s in enumerate(cv.grid["step_size"])}}
    auto = list(cv.grid["step_size"]).index("auto")
    target = np.nanmean(cv.scores[..., auto, :], axis=-1)
    index = np.unravel_index(np.nanargmax(target), target.shape)
    best = {name: float(cv.grid[name][i]) for name, i in zip(("lam", "sigma", "gamma"), index)}
    record.update(best=best, best_cv_auc=float(target[index]),
                  **_trials(dataset, proto, best, num_trials, num_unlabeled, eval_size,
                            num_steps))
    out[grid_name] = record
  return out


def run(settings: Settings, log=cli.log_line):
  """Runs the study on every dataset; writes select_step.json; returns {dataset: record}."""
  store = store_lib.RunStore(settings.output_dir, "select_step")
  store.start(settings.as_dict(exclude=cli.RUN_OPTIONS), resume=settings.resume,
              overwrite=settings.overwrite)
  out = {}
  for name in settings.datasets:
    out[name] = store.cached(name, lambda name=name: study(
        name, settings.num_trials, settings.num_unlabeled, settings.cv_unlabeled,
        settings.eval_size, settings.num_steps, settings.grids, settings.data_dir))
    for grid_name in settings.grids:
      r = out[name][grid_name]
      log(f"{name}, {grid_name} grid: CV pick {r['best']} (CV AUC {r['best_cv_auc']:.4f}); "
          f"diverged tasks of {r['grid_tasks']} per step: {r['grid_diverged_tasks']}")
      log(f"  {len(r['trials'])} trials: mean AUC {r['mean_auc']}; diverged trials "
          f"{r['diverged_trials']}; auto - best converging fixed eta0 = "
          f"{r['auto_minus_best_fixed']}")
  store.finish({"datasets": out})
  return out


if __name__ == "__main__":
  cli.script(Settings, run)
