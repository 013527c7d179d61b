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
Prints one table per dataset and writes results/select_step/<dataset>.json (atomically); each
finished dataset is also written at once to --output_dir/cells/, and ``--resume`` continues an
interrupted run from them.
"""

from absl import app
from absl import flags
import numpy as np

from experiments import common_flags
from experiments import protocols
from experiments import reporting
from experiments import run_store
from qsg_jax import data as data_lib
from qsg_jax import metrics
from qsg_jax import model_selection
from qsg_jax import training
from qsg_jax.errors import DivergenceError


STEPS = ("auto", 1.0, 3.0, 10.0)


def _subsample(x, size, seed):
  if x.shape[0] <= size:
    return x
  return x[np.random.default_rng([seed, 2]).choice(x.shape[0], size, replace=False)]


def _trials(dataset, proto, best, num_trials, num_unlabeled, eval_size, num_steps):
  """AUC per trial and step ("auto", 1, 3, 10) at ``best``; None where training diverged."""
  rows = []
  for seed in range(num_trials):
    trial = protocols.make_trial(dataset, proto, seed, eval_size=eval_size)
    x_u = _subsample(trial.x_unlabeled, num_unlabeled, seed)
    row = {}
    for step in STEPS:
      try:
        fitted = training.fit(trial.x_labeled, trial.y_labeled, x_u, key=seed,
                              num_classes=proto.num_classes, step_size=step,
                              num_steps=num_steps, **best)
        scores = training.decision_function(fitted, trial.x_eval)
        row[str(step)] = float(metrics.ordinal_auc(scores, trial.y_eval, proto.num_classes))
        if step == "auto":
          row["auto_eta0"] = float(fitted.metrics["eta"][0])
      except DivergenceError:
        row[str(step)] = None
    rows.append(row)
    print(dataset.name, best, seed,
          {key: (round(v, 4) if v is not None else "div") for key, v in row.items()}, flush=True)
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
                                        grid=make(list(STEPS)), num_classes=k,
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


FLAGS = flags.FLAGS


def _define_flags():
  """Flags are defined only when run as a script, so tests can import this module."""
  flags.DEFINE_list("datasets", ["skin_nonskin", "sgemm"], "datasets")
  flags.DEFINE_integer("num_trials", 10, "trials per dataset")
  flags.DEFINE_integer("num_unlabeled", 2000, "unlabeled training points")
  flags.DEFINE_integer("cv_unlabeled", 1000, "unlabeled points of the CV")
  flags.DEFINE_integer("eval_size", 2000, "evaluation points per trial")
  flags.DEFINE_integer("num_steps", 1024, "T")
  flags.DEFINE_list("grids", ["paper", "quick"], "CV grids whose pick is tested")
  flags.DEFINE_string("output_dir", "results/select_step", "output directory")
  flags.DEFINE_string("data_dir", None, "data directory (default $QSG_JAX_DATA)")
  common_flags.define_resume_flag()


def main(argv):
  del argv
  settings = {name: FLAGS[name].value for name in (
      "datasets", "num_trials", "num_unlabeled", "cv_unlabeled", "eval_size", "num_steps",
      "grids", "data_dir")}
  store = run_store.CellStore(FLAGS.output_dir)    # checks --output_dir before any fit
  store.start(settings, FLAGS.resume)
  for name in FLAGS.datasets:
    out = store.cached(name, lambda name=name: study(
        name, FLAGS.num_trials, FLAGS.num_unlabeled, FLAGS.cv_unlabeled, FLAGS.eval_size,
        FLAGS.num_steps, FLAGS.grids, FLAGS.data_dir))
    reporting.atomic_write_json(f"{FLAGS.output_dir}/{name}.json", out)
    for grid_name in FLAGS.grids:
      r = out[grid_name]
      print(f"{name}, {grid_name} grid: CV pick {r['best']} (CV AUC {r['best_cv_auc']:.4f}); "
            f"diverged tasks of {r['grid_tasks']} per step: {r['grid_diverged_tasks']}")
      print(f"  {len(r['trials'])} trials: mean AUC {r['mean_auc']}; diverged trials "
            f"{r['diverged_trials']}; auto - best converging fixed eta0 = "
            f"{r['auto_minus_best_fixed']}")
  store.finish_cells()


if __name__ == "__main__":
  _define_flags()
  app.run(main)
