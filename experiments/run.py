r"""Main job: QS3ORAO / QSG-S2AUC on a dataset over several trials, with the papers' protocols.

  python -m experiments.run                      # embedded default dataset, no data needed
  QSG_JAX_DATA=../shared/data python -m experiments.run --dataset=sgemm
  python -m experiments.run --dataset=sgemm --resume       # continue an interrupted run
  python -m experiments.plot results/sgemm                  # redraw its plots

Ordinal datasets (sgemm and other regression sets discretized into 5 equal-frequency classes,
embedded ordinal sets) run QS3ORAO with 500 labeled points and report ordinal AUC and MAE on the
unlabeled points; binary datasets run QSG-S2AUC with 200 labeled points and report AUC on test
data and the error rate at the fitted threshold (run.csv's "mae" column: the same formula).
Shows a progress bar (ETA measured after compilation) and one line per trial
(``--verbosity=1`` adds every training segment's max |f|); writes each trial into
--output_dir/cells/run/ the moment it ends (``--save_models``: its model into models/, for
``qsg_jax.io.load``), and at the end run.json (the step "auto" chose per trial, data checksums,
wall and compile time, versions, command line, devices), run.md, run.csv and the plots of
``experiments.plot``. A finished run in --output_dir is never replaced without --overwrite.

--solver picks how each trial trains (``qsg_jax.FitConfig.solver``): dsg (the default, since
this job reproduces the papers) is their Algorithm 1; direct solves the squared-loss objective
exactly over Nystrom features (``qsg_jax.direct``; the DSG-only flags --step_size, --num_steps,
--num_frequencies, --unlabeled_batch_size, --labeled_batch_size must keep their defaults);
auto is direct for the squared loss unless a DSG-only flag is set. The CV (--cv) uses the same
solver. run.json records the flag (settings, hyperparams) and the solver that ran
("solver_used", and per trial "solver").

Trial t of a run seeded s uses the key ``protocols.trial_key(s, t)`` for its split, its
evaluation subsample and its training, so a trial's numbers depend only on (s, t, settings): an
interrupted run resumed from its trial files gives the uninterrupted run's numbers.

Several processes (one per host): --coordinator_address, --num_processes and --process_id (or
the JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and JAX_PROCESS_ID environment variables), or
--distributed on a managed cluster (SLURM, TPU pods, ...) where JAX finds them itself. --mesh
shards the unlabeled data over every device of every process. Only process 0 writes files.
"""

import dataclasses
import logging
import pathlib
import time
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

import qsg_jax
from qsg_jax import data as data_lib
from qsg_jax import distributed
from experiments import plot
from experiments.common import cli
from experiments.common import protocols
from experiments.common import reporting
from experiments.common import store as store_lib

COLUMNS = ["trial", "auc", "mae", "eta0", "train_time_s", "compile_time_s", "predict_time_s",
           "num_eval"]
ROC_POINTS = 101   # false-positive rates at which each trial's ROC curve is stored
_LOG = logging.getLogger("experiments.run")   # not __name__: "__main__" as a script
# Seconds JAX spent tracing, lowering and compiling, summed over the process (jax.monitoring).
_COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration",
                   "/jax/core/compile/jaxpr_to_mlir_module_duration",
                   "/jax/core/compile/backend_compile_duration")
_compile_seconds = [0.0]
jax.monitoring.register_event_duration_secs_listener(
    lambda event, seconds, **_: _compile_seconds.__setitem__(0, _compile_seconds[0] + seconds)
    if event in _COMPILE_EVENTS else None)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The main job's settings (one flag each)."""
  dataset: str = "lev"
  data_dir: Optional[str] = None
  output_dir: str = cli.setting("results/{dataset}", "Directory of the results ({dataset} is "
                                "replaced by --dataset); a finished run there is never replaced "
                                "without --overwrite.", nonempty=True)
  seed: int = 0
  trials: int = 10
  eval_size: int = 20000
  sigma: float = cli.ENGINE_DEFAULTS["sigma"]
  lam: float = cli.ENGINE_DEFAULTS["lam"]
  gamma: float = cli.ENGINE_DEFAULTS["gamma"]
  step_size: cli.StepSize = cli.ENGINE_DEFAULTS["step_size"]
  num_steps: int = cli.ENGINE_DEFAULTS["num_steps"]
  num_frequencies: int = cli.ENGINE_DEFAULTS["num_frequencies"]
  unlabeled_batch_size: int = cli.ENGINE_DEFAULTS["unlabeled_batch_size"]
  labeled_batch_size: Optional[int] = cli.ENGINE_DEFAULTS["labeled_batch_size"]
  loss: str = cli.ENGINE_DEFAULTS["loss"]
  solver: str = cli.setting(
      "dsg", "How each trial (and --cv) trains: dsg = the papers' Algorithm 1 (default: this job "
      "reproduces the papers); direct = the squared-loss objective solved exactly over Nystrom "
      "features (qsg_jax.direct; DSG-only flags --step_size, --num_steps, --num_frequencies, "
      "--unlabeled_batch_size, --labeled_batch_size must keep their defaults); auto = direct for "
      "the squared loss unless a DSG-only flag is set. Recorded in run.json (solver_used).",
      choices=qsg_jax.config.SOLVERS)
  num_labeled: Optional[int] = cli.setting(
      None, "Labeled points (unset: 500 ordinal, 200 binary, at most half the data).", lower=2)
  num_classes: Optional[int] = cli.setting(None, "k for regression targets (unset: 5).", lower=2)
  cv: str = cli.setting("none", "Choose lam, sigma, gamma (step 'auto') by 5-fold CV on a "
                        "separate split before the trials, as the papers do: paper = their "
                        "539-point grid, quick = 12 points, none = the defaults or the flags "
                        "given.", choices=("paper", "quick", "none"))
  cv_unlabeled: int = cli.setting(1000, "Unlabeled points the CV trains on.", lower=1)
  save_models: bool = cli.setting(False, "Save each trial's model into --output_dir/models/ "
                                  "(qsg_jax.io.save; reload with qsg_jax.io.load).")
  mesh: bool = cli.setting(False, "Shard the unlabeled data over all jax.devices() (mesh axis "
                           "'data').")
  coordinator_address: Optional[str] = cli.setting(
      None, "host:port of process 0 of a multi-process run (unset: $JAX_COORDINATOR_ADDRESS, "
      "else a single process).")
  num_processes: Optional[int] = cli.setting(
      None, "Processes of a multi-process run (unset: $JAX_NUM_PROCESSES).", lower=1)
  process_id: Optional[int] = cli.setting(
      None, "This process's index, 0..num_processes-1 (unset: $JAX_PROCESS_ID).", lower=0)
  distributed: bool = cli.setting(False, "Call jax.distributed.initialize() with no arguments "
                                  "(a managed cluster such as SLURM or a TPU pod supplies them).")


# Settings that neither fix a trial's numbers nor choose which trials run.
_NOT_STORED = cli.RUN_OPTIONS + ("save_models", "mesh", "coordinator_address", "num_processes",
                                 "process_id", "distributed")


def initialize_distributed(*, coordinator_address, num_processes, process_id, auto):
  """Starts JAX's multi-process runtime when asked; returns whether it was started.

  ``qsg_jax.distributed.initialize`` reads unset values from ``JAX_COORDINATOR_ADDRESS``,
  ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID`` (and lets JAX detect SLURM / Open MPI); ``auto``
  (--distributed) calls ``jax.distributed.initialize()`` for clusters where JAX finds them itself.
  """
  if auto and (coordinator_address, num_processes, process_id) == (None, None, None):
    jax.distributed.initialize()
    return True
  return distributed.initialize(coordinator_address, num_processes, process_id)


def error_name(num_classes):
  """What the "mae" column is for k classes: with two, the mean absolute class error is the
  share of rows on the wrong side of the fitted threshold."""
  return "error rate" if num_classes == 2 else "MAE"


def method_and_metric(num_classes):
  """(method name, metric description) for k classes."""
  if num_classes == 2:
    return "QSG-S2AUC", "AUC"
  return "QS3ORAO", f"ordinal AUC (mean over {num_classes - 1} splits)"


def check_evaluation_set(trial, num_classes, t):
  """Raises ``cli.UserError`` when a split's AUC is undefined on trial ``t``'s evaluation points
  (one side of y <= j vs y > j holds no point)."""
  y = np.asarray(trial.y_eval)
  empty = [j for j in range(num_classes - 1) if not (np.any(y > j) and np.any(y <= j))]
  if empty:
    subset = trial.eval_description.startswith("a random subset")
    raise cli.UserError(
        f"trial {t + 1}: the {y.size} evaluation points ({trial.eval_description}) have class "
        f"counts {np.bincount(y, minlength=num_classes).tolist()}, so split(s) {empty} (y <= j "
        "vs y > j) have no point on one side and no AUC (a class with few rows, none among "
        "them). " + ("Score on more points (--eval_size=0 scores every one) or draw other "
                     "splits (--seed)." if subset else "Draw other splits (--seed)."))


def roc_curves(scores, labels, num_classes):
  """[k-1, ROC_POINTS] true-positive rates of split j (y > j positive) at the false-positive
  rates ``np.linspace(0, 1, ROC_POINTS)``."""
  from sklearn import metrics as sk_metrics  # pylint: disable=g-import-not-at-top  (2 s import)
  grid = np.linspace(0.0, 1.0, ROC_POINTS)
  curves = []
  for j in range(num_classes - 1):
    fpr, tpr, _ = sk_metrics.roc_curve(np.asarray(labels) > j, np.asarray(scores))
    curves.append(np.round(np.interp(grid, fpr, tpr), 4))
  return np.stack(curves)


def run_trial(data, proto, key, settings, *, mesh=None, on_step=None, model_path=None):
  """Trains on trial ``key``'s split and scores it; returns the trial's row (a JSON-able dict).

  Args:
    data: ``qsg_jax.data.Dataset``.
    proto: ``protocols.Protocol``.
    key: the trial's key (``protocols.trial_key``).
    settings: ``Settings`` (its hyper-parameters and ``eval_size``).
    mesh: optional ``jax.sharding.Mesh`` splitting the unlabeled data (axis "data").
    on_step: optional callable(report) called by ``qsg_jax.fit`` after each training segment.
    model_path: where to save the trained model (``qsg_jax.io.save``), or None.

  Returns:
    Dict with "auc", "auc_per_split" ([k-1]), "mae", "eta0" (the initial step used; None for
    the direct solver), "train_time_s", "compile_time_s" (JAX compilation during the trial),
    "predict_time_s", "max_abs_score" ([T] max |f| on the labeled points per iteration; direct:
    one value, of the solution), "solver" ("dsg" or "direct"), "roc" ([k-1, 101] true positive
    rates), sizes and description.
  """
  trial = protocols.make_trial(data, proto, key, settings.eval_size)
  compiled_before = _compile_seconds[0]
  reports = []

  def progress(report):
    reports.append(report)
    if on_step is not None:
      on_step(report)

  start = time.perf_counter()
  result = qsg_jax.fit(trial.x_labeled, trial.y_labeled, trial.x_unlabeled,
                       key=protocols.stream_key(key, "training"), num_classes=proto.num_classes,
                       progress=progress, mesh=mesh, **cli.engine_params(settings))
  jax.block_until_ready(result.model.coef)
  train_time = time.perf_counter() - start
  dsg = result.solver == "dsg"
  start = time.perf_counter()
  scores = np.asarray(qsg_jax.decision_function(result, trial.x_eval, mesh=mesh))
  predict_time = time.perf_counter() - start
  if not np.all(np.isfinite(scores)):
    raise qsg_jax.DivergenceError("non-finite scores on the evaluation points; lower "
                                  "--step_size.")
  if model_path is not None:
    qsg_jax.io.save(result, model_path)
  y_eval = jnp.asarray(trial.y_eval)
  per_split = np.asarray(qsg_jax.split_aucs(jnp.asarray(scores), y_eval,
                                                       proto.num_classes))
  classes = qsg_jax.predict_classes(jnp.asarray(scores), result.thresholds)
  return {"auc": float(np.mean(per_split)), "auc_per_split": per_split.tolist(),
          "mae": float(qsg_jax.mean_absolute_error(classes, y_eval)),
          "eta0": float(result.metrics["eta"][0]) if dsg else None, "train_time_s": train_time,
          "compile_time_s": _compile_seconds[0] - compiled_before,
          "predict_time_s": predict_time, "solver": result.solver,
          "max_abs_score": (np.asarray(result.metrics["max_abs_score"]).tolist() if dsg else
                            [reports[-1]["max_abs_score"]]),
          "roc": roc_curves(scores, trial.y_eval, proto.num_classes).tolist(),
          "num_labeled": int(trial.x_labeled.shape[0]),
          "num_unlabeled": int(trial.x_unlabeled.shape[0]),
          "num_eval": int(trial.x_eval.shape[0]), "evaluated_on": trial.eval_description}


def timing_summary(rows, wall_time_s, compile_time_s):
  """This process's wall and compilation time, and the steady-state training time (over the
  trials that compiled nothing)."""
  steady = [r["train_time_s"] for r in rows if not r["includes_compilation"]]
  mean, std, _ = reporting.mean_std(steady)
  return {"wall_time_s": wall_time_s, "compile_time_s": compile_time_s,
          "steady_train_time_mean_s": mean if steady else None,
          "steady_train_time_std_s": std if steady else None, "steady_trials": len(steady)}


def _spread(std, digits):
  """" +- std (std)", or " (one trial: no spread)" where the std is undefined (NaN)."""
  return " (one trial: no spread)" if np.isnan(std) else f" +- {std:.{digits}f} (std)"


def summary_lines(summary):
  """The human summary of a finished run (list of lines)."""
  t = summary["timing"]
  solver = summary["solver_used"] + " solver" + (
      " (chosen by --solver=auto)" if summary["solver"] == "auto" else "")
  trials = reporting.count(summary["num_trials"], "trial")
  lines = [f"{summary['method']} on {summary['dataset']}, {trials}, "
           f"{solver}, scored on {summary['evaluated_on']}:",
           f"  {summary['metric']}: {summary['auc_mean']:.4f}{_spread(summary['auc_std'], 4)}",
           f"  {error_name(summary['protocol']['num_classes'])}: {summary['mae_mean']:.3f}"
           f"{_spread(summary['mae_std'], 3)}"]
  if t["steady_trials"]:
    steady = t["steady_trials"]
    lines.append(f"  training time per trial (steady state, {reporting.count(steady, 'trial')}): "
                 f"{t['steady_train_time_mean_s']:.2f}{_spread(t['steady_train_time_std_s'], 2)}"
                 " s")
  lines.append(f"  wall time {t['wall_time_s']:.1f} s, of which JAX compilation "
               f"{t['compile_time_s']:.1f} s (this process)")
  return lines


def solver_of(settings) -> str:
  """The solver the trials run ("dsg" or "direct", ``qsg_jax.config.choose_solver``), else a
  ``cli.UserError`` naming the flags that --solver cannot take."""
  try:
    config = qsg_jax.FitConfig(**cli.engine_params(settings))
  except ValueError as error:   # a flag's value (the message names it: lam, sigma, ...)
    raise cli.UserError(f"--{error}") from error
  try:
    return qsg_jax.config.choose_solver(config)
  except ValueError as error:
    raise cli.UserError(f"--solver={settings.solver}: {error}") from error


CV_FOLDS = 5   # select_hyperparams: the papers' 5-fold CV, every class in every fold


def select_by_cv(data, proto, settings, params, log):
  """(params with the CV's choice applied, a report dict or None) for ``settings.cv``."""
  if settings.cv == "none":
    return params, None
  split = protocols.make_trial(data, proto, protocols.trial_key(settings.seed,
                                                                protocols.CV_TRIAL), eval_size=1)
  start = time.perf_counter()
  counts = np.bincount(split.y_labeled, minlength=proto.num_classes)
  if counts.min() < CV_FOLDS:   # the papers' 5 folds cannot stratify it: said in this job's terms
    raise cli.UserError(
        f"--cv={settings.cv}: class {int(np.argmin(counts))} of {data.name} has "
        f"{int(counts.min())} labeled point(s) in the CV's split (class counts "
        f"{counts.tolist()}), fewer than the {CV_FOLDS} folds of the papers' CV. Run without "
        "--cv (FitConfig's values), or with a larger --num_labeled.")
  chosen = qsg_jax.model_selection.select_hyperparams(
      split.x_labeled, split.y_labeled, split.x_unlabeled, protocol=settings.cv,
      num_unlabeled=settings.cv_unlabeled, num_classes=proto.num_classes, seed=settings.seed,
      **{name: params[name] for name in ("num_steps", "num_frequencies", "unlabeled_batch_size",
                                         "labeled_batch_size", "loss", "solver")})
  cv_auc = chosen.pop("cv_auc")
  seconds = time.perf_counter() - start
  log(f"{settings.cv} CV on a separate split ({seconds:.0f} s) chose {chosen}, CV AUC "
      f"{cv_auc:.4f}")
  return dict(params, **chosen), {"protocol": settings.cv, "chosen": chosen, "cv_auc": cv_auc,
                                  "seconds": seconds, "num_unlabeled": settings.cv_unlabeled}


def run_trials(data, proto, settings, store, metric, log, mesh=None, models=None):
  """Every trial's row: stored ones as they are, the others trained, scored and stored at once
  (one line each, under a progress bar whose ETA starts after compilation)."""
  todo = [t for t in range(settings.trials) if not store.has(f"trial_{t:05d}")]
  bar = reporting.Progress(len(todo) * settings.num_steps, log=log,
                           enabled=settings.progress and store.writer)
  if models is not None:
    models.mkdir(exist_ok=True)
  rows, first = [], True
  for t in range(settings.trials):
    base = bar.done

    def on_step(report, base=base, t=t):
      if _LOG.isEnabledFor(logging.INFO):
        bar.write(f"  trial {t + 1}: step {report['step']}/{report['num_steps']}, max |f| on the "
                  f"labeled points {report['max_abs_score']:.3g}")
      bar.update(base + report["step"])

    def trial_row(t=t, on_step=on_step):
      row = run_trial(data, proto, protocols.trial_key(settings.seed, t), settings, mesh=mesh,
                      on_step=on_step,
                      model_path=None if models is None else models / f"trial_{t:05d}.npz")
      return dict(trial=t, includes_compilation=first, **row)

    rows.append(store.cached(f"trial_{t:05d}", trial_row))
    if t in todo:
      first, row = False, rows[-1]
      bar.update(base + settings.num_steps)
      step = (f"eta0 {row['eta0']:.3g}" if row["eta0"] is not None else
              f"{row.get('solver', 'dsg')} solver")
      bar.write(f"trial {t + 1}/{settings.trials}: {metric} {row['auc']:.4f}, "
                f"{error_name(proto.num_classes)} "
                f"{row['mae']:.3f}, {step}; train {row['train_time_s']:.1f} s, "
                f"predict {row['predict_time_s']:.1f} s ({row['num_eval']} points), "
                f"compiling {row['compile_time_s']:.1f} s of them")
  bar.close()
  return rows


def run(settings: Settings, log=cli.log_line):
  """Runs (or resumes) the trials, writing each at once; returns the summary dict.

  Raises:
    store_lib.StoreError, PermissionError: the output directory cannot be used as asked.
    cli.UserError: an evaluation set on which an AUC is undefined.
    qsg_jax.data.DataNotFoundError: the dataset's files are missing.
  """
  started, compiled = time.perf_counter(), _compile_seconds[0]
  solver_used = solver_of(settings)
  initialize_distributed(coordinator_address=settings.coordinator_address,
                         num_processes=settings.num_processes, process_id=settings.process_id,
                         auto=settings.distributed)
  mesh = distributed.global_mesh() if settings.mesh else None
  writer = jax.process_index() == 0
  log = log if writer else (lambda line: None)
  output_dir = pathlib.Path(settings.output_dir.format(dataset=settings.dataset))
  data = data_lib.load(settings.dataset, data_dir=settings.data_dir)
  try:   # the protocol and every trial's split, before any run store or training
    proto = dataclasses.replace(   # every class among the evaluation points (esl's class of 2)
        protocols.protocol_for(data, settings.num_labeled, settings.num_classes),
        cover_evaluation=True)
    for t in range(settings.trials):   # every AUC must be defined
      check_evaluation_set(protocols.make_trial(
          data, proto, protocols.trial_key(settings.seed, t), settings.eval_size),
          proto.num_classes, t)
  except ValueError as e:   # sizes or classes the dataset cannot give: the flags' fault
    raise cli.UserError(f"--num_labeled / --num_classes on {data.name}: {e}") from None
  method, metric = method_and_metric(proto.num_classes)
  stored = dict(settings.as_dict(exclude=_NOT_STORED),
                mesh_devices=None if mesh is None else int(mesh.size))
  store = store_lib.RunStore(output_dir, "run", writer=writer)
  done = store.start(stored, resume=settings.resume, overwrite=settings.overwrite,
                     selection=("trials",))
  unsaved = [n for n in done if n.startswith("trial_") and settings.save_models and not (
      output_dir / "models" / f"{n}.npz").exists()]
  if unsaved:   # resumed trials are read back, not retrained: nothing to save for them
    log(f"--save_models: {len(unsaved)} trials were finished without it and are not retrained, "
        "so they have no model file; rerun with --overwrite to save every trial's model.")
  params, cv_report = store.cached("cv", lambda: select_by_cv(
      data, proto, settings, cli.engine_params(settings), log))
  settings = dataclasses.replace(settings, **params)
  log(f"{method} on {data.name}: {data.x.shape[0]} points, {data.x.shape[1]} features, "
      f"k={proto.num_classes}, {proto.num_labeled} labeled, "
      f"{reporting.count(settings.trials, 'trial')}"
      + (f" ({sum(n.startswith('trial_') for n in done)} already done, resumed)"
         if settings.resume else ""))
  _LOG.info("hyper-parameters %s; devices %s", params, jax.devices())
  rows = run_trials(data, proto, settings, store, metric, log, mesh=mesh,
                    models=output_dir / "models" if settings.save_models and writer else None)
  auc, mae = (reporting.mean_std([r[name] for r in rows]) for name in ("auc", "mae"))
  summary = {"dataset": data.name, "method": method, "metric": metric, "solver": settings.solver,
             "solver_used": solver_used,
             "protocol": dataclasses.asdict(proto), "hyperparams": params, "cv": cv_report,
             "num_trials": settings.trials, "evaluated_on": rows[0]["evaluated_on"],
             "data_files": reporting.data_files(data), "auc_mean": auc[0], "auc_std": auc[1],
             "mae_mean": mae[0], "mae_std": mae[1],
             "timing": timing_summary(rows, time.perf_counter() - started,
                                      _compile_seconds[0] - compiled), "trials": rows}
  for line in [""] + summary_lines(summary):
    log(line)
  stats = [{"trial": "mean", "auc": auc[0], "mae": mae[0]},
           {"trial": "std", "auc": auc[1], "mae": mae[1]}]
  paths = store.finish(summary, [(None, rows + stats, COLUMNS), ("Timing", [summary["timing"]],
                                                                 None)],
                       title=f"{method} on {data.name} ({solver_used} solver; {metric} on "
                             f"{rows[0]['evaluated_on']})")
  if paths:
    pngs = plot.draw(output_dir)
    log(f"wrote {paths['json']}, {paths['md']} and " + ", ".join(str(p) for p in pngs))
  return summary


if __name__ == "__main__":
  cli.script(Settings, run)
