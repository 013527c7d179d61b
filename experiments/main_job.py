"""The main job's work, with plain keyword arguments: trials, their summary, resumable writing.

``experiments.run`` reads the flags and calls ``run_job``. Trial t of a run seeded s uses the key
``protocols.trial_key(s, t)`` for its split, its evaluation subsample and (folded once more) its
training, so a trial's numbers depend only on (s, t, settings): an interrupted run resumed from
its trial files gives the uninterrupted run's numbers.
"""

import time
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

import qsg_jax
from qsg_jax import data as data_lib
from experiments import plot as plot_lib
from experiments import progress as progress_lib
from experiments import protocols
from experiments import reporting
from experiments import run_store

COLUMNS = ["trial", "auc", "mae", "train_time_s", "predict_time_s", "num_eval",
           "includes_compilation"]


def method_and_metric(num_classes):
  """(method name, metric description) for k classes."""
  if num_classes == 2:
    return "QSG-S2AUC", "AUC"
  return "QS3ORAO", f"ordinal AUC (mean over {num_classes - 1} splits)"


def run_trial(dataset, proto, key, params, eval_size, *, mesh=None,
              on_step: Optional[Callable[[dict], None]] = None):
  """Trains on trial ``key``'s split and scores it; returns the trial's row (a JSON-able dict).

  Args:
    dataset: ``qsg_jax.data.Dataset``.
    proto: ``protocols.Protocol``.
    key: the trial's key (``protocols.trial_key``).
    params: keyword arguments of ``qsg_jax.fit`` (hyper-parameters).
    eval_size: score on a random subset of this many evaluation points (0: all).
    mesh: optional ``jax.sharding.Mesh`` splitting the unlabeled data (axis "data").
    on_step: optional callable(report) called by ``qsg_jax.fit`` after each training segment.

  Returns:
    Dict with "auc", "auc_per_split" ([k-1]), "mae", "train_time_s", "predict_time_s",
    "max_abs_score" ([T] max |f| on the labeled points per iteration), sizes and description.
  """
  trial = protocols.make_trial(dataset, proto, key, eval_size)
  start = time.perf_counter()
  result = qsg_jax.fit(trial.x_labeled, trial.y_labeled, trial.x_unlabeled,
                       key=protocols.training_key(key), num_classes=proto.num_classes,
                       progress=on_step, mesh=mesh, **params)
  jax.block_until_ready(result.model.coef)
  train_time = time.perf_counter() - start
  start = time.perf_counter()
  scores = qsg_jax.decision_function(result, trial.x_eval, mesh=mesh)
  predict_time = time.perf_counter() - start
  if not np.all(np.isfinite(scores)):
    raise FloatingPointError("non-finite scores on the evaluation points; lower --step_size.")
  y_eval = jnp.asarray(trial.y_eval)
  per_split = np.asarray(qsg_jax.ordinal_auc_per_split(jnp.asarray(scores), y_eval,
                                                       proto.num_classes))
  classes = qsg_jax.predict_classes(jnp.asarray(scores), result.thresholds)
  return {"auc": float(np.mean(per_split)), "auc_per_split": per_split.tolist(),
          "mae": float(qsg_jax.mean_absolute_error(classes, y_eval)),
          "train_time_s": train_time, "predict_time_s": predict_time,
          "max_abs_score": np.asarray(result.metrics["max_abs_score"]).tolist(),
          "num_labeled": int(trial.x_labeled.shape[0]),
          "num_unlabeled": int(trial.x_unlabeled.shape[0]),
          "num_eval": int(trial.x_eval.shape[0]), "evaluated_on": trial.eval_description}


def timing_summary(rows):
  """Compilation separated from steady-state training time.

  A trial that was the first one run by its process ("includes_compilation") pays for the
  compilation; the others run the cached executables. Compilation is estimated as the first
  trials' mean time minus the steady-state mean (None when every trial was a first one).
  """
  first = [r["train_time_s"] for r in rows if r["includes_compilation"]]
  steady = [r["train_time_s"] for r in rows if not r["includes_compilation"]]
  mean, std, _ = reporting.mean_std(steady)
  return {"first_trial_time_s": float(np.mean(first)) if first else None,
          "steady_train_time_mean_s": mean if steady else None,
          "steady_train_time_std_s": std if steady else None,
          "steady_trials": len(steady),
          "compile_time_s": float(np.mean(first)) - mean if first and steady else None}


def summary_lines(summary):
  """The human summary of a finished run (list of lines)."""
  t = summary["timing"]
  lines = [f"{summary['method']} on {summary['dataset']}, {summary['num_trials']} trials, "
           f"scored on {summary['evaluated_on']}:",
           f"  {summary['metric']}: {summary['auc_mean']:.4f} +- {summary['auc_std']:.4f} (std)",
           f"  MAE: {summary['mae_mean']:.3f} +- {summary['mae_std']:.3f}"]
  if t["steady_trials"]:
    lines.append(f"  training time per trial (steady state, {t['steady_trials']} trials): "
                 f"{t['steady_train_time_mean_s']:.2f} +- {t['steady_train_time_std_s']:.2f} s")
    lines.append(f"  compilation (first trial {t['first_trial_time_s']:.2f} s minus the steady "
                 f"mean): {t['compile_time_s']:.2f} s")
  else:
    lines.append(f"  training time {t['first_trial_time_s']:.2f} s, compilation included (run "
                 "two or more trials to separate them)")
  return lines


# The CV split of a run is trial CV_TRIAL of its seed: never one of the reported trials.
CV_TRIAL = 2**31 - 1


def select_by_cv(data, proto, seed, params, cv, cv_unlabeled, log):
  """(params with the CV's choice applied, a report dict or None) for ``run_job``'s ``cv``."""
  if cv == "none":
    return params, None
  split = protocols.make_trial(data, proto, protocols.trial_key(seed, CV_TRIAL), eval_size=1)
  start = time.perf_counter()
  chosen = qsg_jax.model_selection.select_hyperparams(
      split.x_labeled, split.y_labeled, split.x_unlabeled, protocol=cv,
      num_unlabeled=cv_unlabeled, num_classes=proto.num_classes, seed=seed,
      **{name: params[name] for name in ("num_steps", "num_frequencies", "unlabeled_batch_size",
                                         "labeled_batch_size", "loss")})
  cv_auc = chosen.pop("cv_auc")
  seconds = time.perf_counter() - start
  log(f"{cv} CV on a separate split ({seconds:.0f} s) chose {chosen}, CV AUC {cv_auc:.4f}")
  return dict(params, **chosen), {"protocol": cv, "chosen": chosen, "cv_auc": cv_auc,
                                  "seconds": seconds, "num_unlabeled": cv_unlabeled}


def run_job(*, dataset: str, data_dir: Optional[str], num_labeled: Optional[int],
            num_classes: Optional[int], eval_size: int, seed: int, trials: int, output_dir: str,
            params: dict, resume: bool = False, mesh=None, show_progress: bool = True,
            verbose: bool = False, writer: bool = True, log: Callable[[str], None] = print,
            cv: str = "none", cv_unlabeled: int = 1000):
  """Runs (or resumes) the trials, writing each at once; returns the summary dict.

  Args:
    dataset: name for ``qsg_jax.data.load``.
    data_dir: data directory (None: $QSG_JAX_DATA, then the user cache).
    num_labeled, num_classes: protocol overrides (None: the paper's).
    eval_size: evaluation points scored per trial (0: all).
    seed: seed of the run (trial t: ``protocols.trial_key(seed, t)``).
    trials: number of trials.
    output_dir: results directory (checked writable before any training).
    params: ``qsg_jax.fit`` hyper-parameters.
    resume: continue the unfinished run in ``output_dir`` (same settings required).
    mesh: optional ``jax.sharding.Mesh`` (axis "data") for the unlabeled data.
    show_progress: progress bar with ETA on stderr.
    verbose: also log every training segment (max |f| so far).
    writer: whether this process writes files (process 0 of a multi-process run).
    log: callable(str) for the per-trial and summary lines.
    cv: "paper" (539-point grid) or "quick" (12 points): choose lam, sigma, gamma (and the step,
      "auto") by 5-fold CV on a separate split before the trials, as the papers do; "none":
      ``params`` as given.
    cv_unlabeled: unlabeled points the CV trains on.

  Raises:
    run_store.ResumeError, PermissionError: see ``run_store.RunStore.start``.
  """
  data = data_lib.load(dataset, data_dir=data_dir)
  proto = protocols.protocol_for(data, num_labeled, num_classes)
  method, metric = method_and_metric(proto.num_classes)
  params, cv_report = select_by_cv(data, proto, seed, params, cv, cv_unlabeled, log)
  settings = {"cv": cv, "dataset": data.name, "protocol": proto.__dict__, "eval_size": eval_size,
              "seed": seed, "trials": trials, "hyperparams": params,
              "mesh_devices": None if mesh is None else int(mesh.size)}
  store = run_store.RunStore(output_dir, writer=writer)
  done = store.start(settings, trials, resume)
  log(f"{method} on {data.name}: {data.x.shape[0]} points, {data.x.shape[1]} features, "
      f"k={proto.num_classes}, {proto.num_labeled} labeled, {trials} trials"
      + (f" ({len(done)} already done, resumed)" if resume else ""))
  log(f"hyper-parameters: {params}; devices: {jax.devices()}")
  steps = params["num_steps"]
  bar = progress_lib.ProgressBar((trials - len(done)) * steps, enabled=show_progress)
  rows, first = [], True
  for t in range(trials):
    if t in done:
      rows.append(done[t])
      continue
    base = bar.done

    def on_step(report, base=base, t=t):
      if verbose:
        bar.write(f"  trial {t + 1}: step {report['step']}/{report['num_steps']}, max |f| on the "
                  f"labeled points {report['max_abs_score']:.3g}")
      bar.update(base + report["step"])

    row = run_trial(data, proto, protocols.trial_key(seed, t), params, eval_size, mesh=mesh,
                    on_step=on_step)
    row = dict(trial=t, includes_compilation=first, **row)
    first = False
    rows.append(row)
    store.save_trial(t, row, len(rows), trials)
    bar.update(base + steps)
    bar.write(f"trial {t + 1}/{trials}: {metric} {row['auc']:.4f}, MAE {row['mae']:.3f}, "
              f"train {row['train_time_s']:.1f} s, predict {row['predict_time_s']:.1f} s "
              f"({row['num_eval']} points)")
  bar.close()
  auc, mae = (reporting.mean_std([r[name] for r in rows]) for name in ("auc", "mae"))
  summary = {"dataset": data.name, "method": method, "metric": metric,
             "protocol": proto.__dict__, "hyperparams": params, "cv": cv_report,
             "num_trials": trials,
             "evaluated_on": rows[0]["evaluated_on"], "auc_mean": auc[0], "auc_std": auc[1],
             "mae_mean": mae[0], "mae_std": mae[1], "timing": timing_summary(rows),
             "trials": rows}
  for line in [""] + summary_lines(summary):
    log(line)
  stats = [{"trial": "mean", "auc": auc[0], "mae": mae[0]},
           {"trial": "std", "auc": auc[1], "mae": mae[1]}]
  sections = [(None, rows + stats, COLUMNS),
              ("Timing", [summary["timing"]], None)]
  paths = store.finish(summary, sections,
                       title=f"{method} on {data.name} ({metric} on {rows[0]['evaluated_on']})")
  if paths:
    pngs = plot_lib.draw(output_dir)
    log(f"wrote {paths['json']}, {paths['md']} and " + ", ".join(str(p) for p in pngs))
  return summary
