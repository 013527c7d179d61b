r"""The value of unlabeled data, measured: AUC(gamma) - AUC(gamma = 1), paired over trials.

  QSG_JAX_DATA=../shared/data python -m experiments.unlabeled_value --datasets=lev,cod_rna
  python -m experiments.unlabeled_value --datasets=sgemm --unlabeled_sizes=1000,10000,all

For every dataset and labeled size n_l (default 50, 100, 200, 500, 1000), lam and sigma are chosen
once by k-fold cross-validation at gamma = 1 (supervised) on a separate split that is never a
trial (``main_job.CV_TRIAL``; grid ``--cv_lam`` x ``--cv_sigma``, the papers' 2^-3..2^3 plus
smaller lam), then held fixed. Each trial t (key ``protocols.trial_key(seed, t)``, split by
``protocols.make_trial`` with the dataset's protocol at n_l labeled points) trains QSG-S2AUC /
QS3ORAO at every gamma of ``--gammas`` on the same labeled points, the same unlabeled points
(the first n_u of a permutation drawn from the trial's key: nested subsets for
``--unlabeled_sizes``), the same training key and the same random features and mini-batches,
and scores every model on the same evaluation points (binary: test data; ordinal: the unlabeled
points, ordinal AUC of Eq. 2). The gammas of a trial are one ``jax.vmap`` of ``engine.train``
over ``Hyperparams`` (``fit_over_gammas``): one compilation and shared features for all of them.

Step size: with ``--step_size=auto`` (default) each gamma gets its own auto step (the eta0
``qsg_jax.fit(step_size="auto")`` would use for that gamma; it depends on gamma through the
Hessian of the risk), so every vmapped run equals the separate ``qsg_jax.fit`` call to float32
rounding (tests/test_unlabeled_value.py). A run whose scores diverge (``check_divergence``) is
reported as diverged, its AUC is None, and its trial is left out of that gamma's differences.

Labeled sizes are run only where the data allow: at most half of the points a labeled set is
drawn from, and every class present in a uniform draw with probability >= 0.5 (``plan_sizes``);
the others are listed as skipped with the reason.

Layout of ``--output_dir`` (every file written atomically; a rerun resumes from finished cells,
after checking that the settings the numbers depend on are unchanged)::

  DATASET/settings.json                       what the cells depend on
  DATASET/cv/nl_00200.json                    the CV choice for 200 labeled points
  DATASET/cells/nl_00200_nu_0001000_t_003.json  one trial at (200 labeled, 1000 unlabeled)
  DATASET/unlabeled_value.{json,md,csv,png}   the dataset's summary, table and figure
  unlabeled_value.{json,md}                   every dataset summarized in the directory
"""

import json
import math
import pathlib
import time

from absl import app
from absl import flags
import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax.engine import auto_step
from qsg_jax import data as data_lib
from qsg_jax import defaults
from qsg_jax import engine
from qsg_jax import model_selection
from qsg_jax import training
from qsg_jax.errors import DivergenceError
from experiments import common_flags
from experiments import comparison_methods as cm
from experiments import main_job
from experiments import protocols
from experiments import reporting
from experiments import unlabeled_value_report as report

FLAGS = flags.FLAGS

DEFAULT_DATASETS = ("lev", "era", "swd", "esl", "breast_cancer", "cod_rna", "ijcnn1", "skin",
                    "bank_marketing", "accelerometer", "sgemm")
DEFAULT_SETTINGS = {
    "data_dir": None,
    "labeled_sizes": [50, 100, 200, 500, 1000],
    "gammas": [0.0, 0.25, 0.5, 0.75, 1.0],
    "unlabeled_sizes": ["all"],   # ints and/or "all" (every unlabeled point of the trial)
    "trials": 10,
    "seed": 0,
    "eval_size": 20000,
    "cv_lam": [1e-4, 1e-3, 1e-2, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0],
    "cv_sigma": [0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0],
    "cv_folds": 5,
    "step_size": defaults.STEP_SIZE,
    "num_steps": defaults.NUM_STEPS,
    "num_frequencies": defaults.NUM_FREQUENCIES,
    "unlabeled_batch_size": defaults.UNLABELED_BATCH_SIZE,
    "divergence_threshold": defaults.DIVERGENCE_THRESHOLD,
    "min_cover_probability": 0.5,
}
# Settings that select which cells run; the others fix the numbers of a cell.
_SELECTION = ("data_dir", "labeled_sizes", "unlabeled_sizes", "trials")
# Stream of ``protocols.trial_rng`` that orders a trial's unlabeled points (0-2 are taken).
UNLABELED_STREAM = 3


def fit_over_gammas(x_labeled, y_labeled, x_unlabeled, x_eval, *, key, num_classes, sigma, lam,
                    gammas, step_size="auto", num_steps=defaults.NUM_STEPS,
                    num_frequencies=defaults.NUM_FREQUENCIES,
                    unlabeled_batch_size=defaults.UNLABELED_BATCH_SIZE,
                    divergence_threshold=defaults.DIVERGENCE_THRESHOLD):
  """Trains at every gamma in one vmapped ``engine.train`` and scores ``x_eval``.

  Run g equals ``qsg_jax.fit(x_labeled, y_labeled, x_unlabeled, key=key, gamma=gammas[g], ...)``
  with the same other arguments, to float32 rounding: same config, same initial state, same
  samples and features; "auto" resolves to each gamma's own step (``qsg_jax.engine.auto_step``).

  Args:
    x_labeled: [n_l, d] float32; y_labeled: [n_l] int 0..k-1; x_unlabeled: [n_u, d] float32.
    x_eval: [n_e, d] float32 points to score.
    key: the training PRNG key (typed).
    num_classes: k.
    sigma, lam: kernel parameter and regularization, shared by every run.
    gammas: [G] gammas in [0, 1] (one shared by the k-1 splits).
    step_size: "auto" or a number eta0 (the same for every gamma).
    num_steps, num_frequencies, unlabeled_batch_size: T, m, B.
    divergence_threshold: as ``qsg_jax.fit``.

  Returns:
    Dict: "scores" [G, n_e] NumPy float32 (NaN rows where diverged), "eta0" [G], "diverged" [G]
    bool, "messages" [G] (the ``DivergenceError`` text or None), "max_abs_score" [G] (peak max
    |f| on the labeled points).
  """
  k = int(num_classes)
  x_l = np.asarray(x_labeled, np.float32)
  y_l = np.asarray(y_labeled, np.int64)
  x_u = np.asarray(x_unlabeled, np.float32)
  gammas = np.asarray(gammas, np.float32)
  if gammas.ndim != 1 or np.any((gammas < 0) | (gammas > 1)):
    raise ValueError(f"gammas must be a 1-D list of values in [0, 1]; received {gammas}.")
  if isinstance(step_size, str) and step_size == "auto":
    eta0 = np.array([auto_step.auto_step_size(x_l, y_l, x_u, k, sigma, lam, g, key,
                                               unlabeled_batch_size) for g in gammas], np.float32)
  else:
    eta0 = np.full(gammas.shape, float(step_size), np.float32)
  config = engine.make_config(k, num_steps, num_frequencies=num_frequencies,
                              labeled_batch_size=None, unlabeled_batch_size=unlabeled_batch_size,
                              loss="squared")
  config = config.replace(cache_unlabeled=engine.use_unlabeled_cache(x_u.shape[0], config))
  data = engine.TrainData(jnp.asarray(x_l), jnp.asarray(y_l), jnp.asarray(x_u))
  state = engine.init(key, data, config, num_unlabeled=x_u.shape[0])
  hyper = engine.Hyperparams(
      sigma=jnp.float32(sigma), lam=jnp.float32(lam),
      gamma=jnp.asarray(np.repeat(gammas[:, None], k - 1, axis=1)), eta0=jnp.asarray(eta0))
  batched = engine.Hyperparams(sigma=None, lam=None, gamma=0, eta0=0)
  states, metrics = jax.vmap(
      lambda h: engine.train(state, data, h, config, config.num_steps), in_axes=(batched,))(hyper)
  score = jax.vmap(lambda coef, scale: engine.model_scores(
      engine.Model(state.feature_key, coef, scale, hyper.sigma), jnp.asarray(x_eval),
      config.block_group, config.predict_chunk))
  scores = np.array(score(states.coef, states.scale))
  metrics = jax.device_get(metrics)
  diverged, messages = np.zeros(gammas.size, bool), [None] * gammas.size
  for g in range(gammas.size):
    try:
      training.check_divergence({name: v[g] for name, v in metrics.items()},
                                divergence_threshold)
      if not np.all(np.isfinite(scores[g])):
        raise DivergenceError("non-finite scores on the evaluation points.")
    except DivergenceError as e:
      diverged[g], messages[g] = True, str(e)
      scores[g] = np.nan
  return {"scores": scores, "eta0": eta0, "diverged": diverged, "messages": messages,
          "max_abs_score": np.nanmax(np.asarray(metrics["max_abs_score"], np.float64), axis=1)}


def _labeled_pool(dataset, proto):
  """(labels of the points a labeled set is drawn from (approximately: all of them), pool size)."""
  y = protocols.ordinal_labels(dataset, proto.num_classes)
  n = y.shape[0]
  if proto.eval_on == "test" and dataset.x_test is None:
    n -= int(round(proto.test_fraction * n))
  return y, n


def cover_probability(counts, pool, num_labeled):
  """P(every class occurs in a uniform draw of ``num_labeled`` of ``pool`` points).

  Classes are treated as independent (a close approximation; their absences are slightly
  negatively correlated): prod_c (1 - C(pool - n_c, n_l) / C(pool, n_l)).
  """
  scale = pool / float(np.sum(counts))
  log_choose = lambda n, r: math.lgamma(n + 1) - math.lgamma(r + 1) - math.lgamma(n - r + 1)
  prob = 1.0
  for c in counts:
    rest = pool - max(1.0, c * scale)
    absent = 0.0 if rest < num_labeled else math.exp(log_choose(rest, num_labeled)
                                                     - log_choose(pool, num_labeled))
    prob *= 1.0 - absent
  return prob


def plan_sizes(dataset, labeled_sizes, min_cover_probability=0.5):
  """(usable labeled sizes, [{"num_labeled", "reason"}] skipped) of ``dataset``.

  A size is usable when it is at most half of the points a labeled set is drawn from (the rest
  stay unlabeled) and a uniform draw has every class with probability >= ``min_cover_probability``
  (``split_semisupervised`` redraws until it does).
  """
  proto = protocols.protocol_for(dataset)
  y, pool = _labeled_pool(dataset, proto)
  counts = np.bincount(y, minlength=proto.num_classes)
  usable, skipped = [], []
  for n_l in labeled_sizes:
    if n_l > pool // 2:
      skipped.append({"num_labeled": n_l, "reason": f"more than half of the {pool} points a "
                      "labeled set is drawn from"})
      continue
    prob = cover_probability(counts, pool, n_l)
    if prob < min_cover_probability:
      skipped.append({"num_labeled": n_l, "reason": f"every class present with probability "
                      f"{prob:.2f} < {min_cover_probability} (class counts {counts.tolist()})"})
      continue
    usable.append(n_l)
  return usable, skipped


def select_lam_sigma(dataset, proto, args, log=print):
  """lam and sigma chosen by CV at gamma = 1 on a split that is never a trial; the CV record.

  The split is trial ``main_job.CV_TRIAL`` of the seed (the next keys below it when its labeled
  points hold a class with fewer than two points after merging rare ordinal classes). Classes
  with fewer labeled points than folds are merged into an ordinal neighbour for the CV only, and
  the folds are at most the smallest class size.
  """
  for attempt in range(50):
    cv_key = protocols.trial_key(args["seed"], main_job.CV_TRIAL - attempt)
    split = protocols.make_trial(dataset, proto, cv_key, eval_size=1)
    y_cv = cm.merge_rare_classes(split.y_labeled, args["cv_folds"])
    if np.bincount(y_cv).min() >= 2:
      break
  else:
    raise ValueError(f"no CV split of {dataset.name} at {proto.num_labeled} labeled points has "
                     "two points of every class; use more labeled points.")
  folds = int(min(args["cv_folds"], np.bincount(y_cv).min()))
  grid = {"lam": args["cv_lam"], "sigma": args["cv_sigma"], "gamma": [1.0],
          "step_size": [args["step_size"]]}
  start = time.perf_counter()
  result = model_selection.cross_validate(
      split.x_labeled, y_cv, None, grid=grid, num_folds=folds, seed=args["seed"],
      key=args["seed"], num_steps=args["num_steps"], num_frequencies=args["num_frequencies"],
      unlabeled_batch_size=args["unlabeled_batch_size"],
      divergence_threshold=args["divergence_threshold"])
  record = {"lam": result.best["lam"], "sigma": result.best["sigma"], "cv_auc": result.best_score,
            "num_folds": folds, "cv_classes": int(y_cv.max()) + 1, "cv_attempt": attempt,
            "seconds": time.perf_counter() - start}
  log(f"  CV at {proto.num_labeled} labeled (gamma = 1, {folds} folds, "
      f"{record['seconds']:.0f} s): lam {record['lam']:g}, sigma {record['sigma']:g}, "
      f"CV AUC {record['cv_auc']:.4f}")
  return record


class CellStore:
  """The files of one dataset's run under ``output_dir/DATASET`` (module docstring)."""

  def __init__(self, output_dir, dataset):
    self.dir = pathlib.Path(output_dir) / dataset
    for sub in ("cv", "cells"):
      (self.dir / sub).mkdir(parents=True, exist_ok=True)
      reporting.remove_stale_temporaries(self.dir / sub)
    reporting.remove_stale_temporaries(self.dir)

  def check_settings(self, settings):
    """Stores ``settings``, or checks they equal the stored ones (cells are reused then)."""
    path = self.dir / "settings.json"
    settings = reporting.jsonable(settings)
    if path.exists():
      stored = json.loads(path.read_text())
      if stored != settings:
        diff = sorted(k for k in set(stored) | set(settings) if stored.get(k) != settings.get(k))
        raise ValueError(f"{self.dir} holds cells computed with other settings ({diff}: stored "
                         f"{[stored.get(k) for k in diff]}, now {[settings.get(k) for k in diff]})"
                         "; rerun with the stored values or choose another --output_dir.")
    else:
      reporting.atomic_write_json(path, settings)

  def cv_path(self, n_l):
    return self.dir / "cv" / f"nl_{n_l:05d}.json"

  def cell_path(self, n_l, n_u, t):
    return self.dir / "cells" / f"nl_{n_l:05d}_nu_{n_u:07d}_t_{t:03d}.json"

  @staticmethod
  def read(path):
    return json.loads(path.read_text()) if path.exists() else None

  @staticmethod
  def write(path, payload):
    reporting.atomic_write_json(path, payload)


def unlabeled_sizes_of(sizes, available):
  """Sorted distinct ints of ``sizes`` ("all" = ``available``; larger ones are capped)."""
  return sorted({available if s == "all" else min(int(s), available) for s in sizes})


def run_cell(trial, order, n_u, choice, proto, args, key):
  """One trial at ``n_u`` unlabeled points: every gamma, scored; the cell dict."""
  start = time.perf_counter()
  out = fit_over_gammas(
      trial.x_labeled, trial.y_labeled, trial.x_unlabeled[order[:n_u]], trial.x_eval,
      key=protocols.training_key(key), num_classes=proto.num_classes, sigma=choice["sigma"],
      lam=choice["lam"], gammas=args["gammas"], step_size=args["step_size"],
      num_steps=args["num_steps"], num_frequencies=args["num_frequencies"],
      unlabeled_batch_size=args["unlabeled_batch_size"],
      divergence_threshold=args["divergence_threshold"])
  aucs, splits = [], []
  for g in range(len(args["gammas"])):
    if out["diverged"][g]:
      aucs.append(None)
      splits.append(0)
    else:
      auc, scored = cm.scored_auc(out["scores"][g], trial.y_eval, proto.num_classes)
      aucs.append(auc)
      splits.append(scored)
  return {"num_labeled": proto.num_labeled, "num_unlabeled": int(n_u), "gammas": args["gammas"],
          "auc": aucs, "splits_scored": splits, "diverged": out["diverged"].tolist(),
          "divergence_messages": out["messages"], "eta0": out["eta0"].tolist(),
          "max_abs_score": out["max_abs_score"].tolist(), "lam": choice["lam"],
          "sigma": choice["sigma"], "num_eval": int(trial.x_eval.shape[0]),
          "evaluated_on": trial.eval_description, "seconds": time.perf_counter() - start}


def run_dataset(name, args, output_dir, log=print):
  """Runs (or resumes) every cell of one dataset and writes its summary; returns the summary."""
  dataset = data_lib.load(name, data_dir=args["data_dir"])
  base = protocols.protocol_for(dataset)
  usable, skipped = plan_sizes(dataset, args["labeled_sizes"], args["min_cover_probability"])
  store = CellStore(output_dir, name)
  store.check_settings({k: v for k, v in args.items() if k not in _SELECTION})
  log(f"\n{name}: {dataset.x.shape[0]} points, d={dataset.x.shape[1]}, k={base.num_classes}; "
      f"labeled sizes {usable}" + "".join(f"; skipped {s['num_labeled']}: {s['reason']}"
                                          for s in skipped))
  start, cells, cvs = time.perf_counter(), [], {}
  for n_l in usable:
    proto = protocols.protocol_for(dataset, num_labeled=n_l)
    choice = store.read(store.cv_path(n_l))
    if choice is None:
      choice = select_lam_sigma(dataset, proto, args, log)
      store.write(store.cv_path(n_l), choice)
    cvs[n_l] = choice
    for t in range(args["trials"]):
      key = protocols.trial_key(args["seed"], t)
      trial = protocols.make_trial(dataset, proto, key, args["eval_size"] or None)
      available = trial.x_unlabeled.shape[0]
      order = protocols.trial_rng(key, UNLABELED_STREAM).permutation(available)
      for n_u in unlabeled_sizes_of(args["unlabeled_sizes"], available):
        path = store.cell_path(n_l, n_u, t)
        cell = store.read(path)
        if cell is None:
          cell = dict(run_cell(trial, order, n_u, choice, proto, args, key), trial=t)
          store.write(path, cell)
          aucs = ", ".join("div" if a is None else f"{a:.4f}" for a in cell["auc"])
          log(f"  {n_l} labeled, {n_u} unlabeled, trial {t + 1}/{args['trials']}: AUC at gamma "
              f"{args['gammas']}: {aucs} ({cell['seconds']:.1f} s)")
        cells.append(cell)
  rows = report.summarize(cells, args["gammas"])
  summary = {"dataset": name, "task": base.task, "num_classes": base.num_classes,
             "metric": "AUC" if base.num_classes == 2 else "ordinal AUC",
             "evaluated_on": cells[0]["evaluated_on"] if cells else None,
             "labeled_sizes": usable, "skipped": skipped, "cv": cvs, "rows": rows,
             "conclusion": report.conclusion_lines(name, rows), "settings": args,
             "seconds": time.perf_counter() - start, "cells": cells}
  write_dataset_summary(store.dir, summary)
  return summary


def write_dataset_summary(directory, summary):
  """DATASET/unlabeled_value.{json,md,csv,png} of one dataset's summary."""
  name = summary["dataset"]
  cv_rows = [dict(num_labeled=n_l, **{k: v for k, v in c.items()})
             for n_l, c in summary["cv"].items()]
  sections = [(None, report.table_rows(summary["rows"]), None),
              ("Paired differences (one row per gamma)", summary["rows"], None),
              ("lam, sigma chosen by CV at gamma = 1 (held fixed across gammas)", cv_rows, None)]
  if summary["skipped"]:
    sections.append(("Labeled sizes skipped", summary["skipped"], None))
  sections.append(("Conclusion", [{"line": s} for s in summary["conclusion"]], None))
  reporting.write_report(directory, "unlabeled_value", summary, sections,
                         title=f"{name}: {summary['metric']}(gamma) and "
                         f"{summary['metric']}(gamma) - {summary['metric']}(1) +- paired SE "
                         f"(scored on {summary['evaluated_on']})")
  if summary["rows"]:
    report.plot_dataset(summary["rows"], name, summary["metric"],
                        pathlib.Path(directory) / "unlabeled_value.png")


def write_combined(output_dir):
  """output_dir/unlabeled_value.{json,md}: every dataset summary found in ``output_dir``."""
  summaries = []
  for path in sorted(pathlib.Path(output_dir).glob("*/unlabeled_value.json")):
    summaries.append(json.loads(path.read_text()))
  sections = []
  for s in summaries:
    sections.append((f"{s['dataset']} ({s['metric']} on {s['evaluated_on']}; figure "
                     f"{s['dataset']}/unlabeled_value.png)", report.table_rows(s["rows"]), None))
  sections.append(("Conclusions", [{"line": line} for s in summaries for line in s["conclusion"]],
                   None))
  payload = {"datasets": [{k: v for k, v in s.items() if k not in ("cells", "environment")}
                          for s in summaries]}
  return reporting.write_report(output_dir, "unlabeled_value", payload, sections,
                                title="Value of unlabeled data: AUC / AUC(gamma) - AUC(1) +- "
                                "paired SE (* = more than 2 SE)")


def run_study(datasets, *, output_dir, log=print, **settings):
  """Runs every dataset (writing each summary) and the combined report; returns the summaries.

  Raises:
    ValueError: unknown settings, gammas without 1.0, or settings that differ from stored cells.
  """
  unknown = sorted(set(settings) - set(DEFAULT_SETTINGS))
  if unknown:
    raise ValueError(f"unknown settings {unknown}; expected some of {sorted(DEFAULT_SETTINGS)}.")
  args = dict(DEFAULT_SETTINGS, **settings)
  args["gammas"] = [float(g) for g in args["gammas"]]
  if 1.0 not in args["gammas"]:
    raise ValueError(f"gammas must contain 1.0 (the supervised reference); received "
                     f"{args['gammas']}.")
  args["labeled_sizes"] = [int(n) for n in args["labeled_sizes"]]
  args["unlabeled_sizes"] = [s if s == "all" else int(s) for s in args["unlabeled_sizes"]]
  for name in ("cv_lam", "cv_sigma"):
    args[name] = [float(v) for v in args[name]]
  reporting.check_writable(output_dir)
  log(f"settings: {args}; devices {jax.devices()}")
  summaries = []
  for name in datasets:
    try:
      summaries.append(run_dataset(name, args, output_dir, log))
    except data_lib.DataNotFoundError as e:
      log(f"\n{name}: SKIPPED, data files not found ({str(e).splitlines()[0]})")
      continue
    for line in summaries[-1]["conclusion"]:
      log(line)
    log(f"{name} done in {summaries[-1]['seconds']:.0f} s")
  paths = write_combined(output_dir)
  log(f"wrote {paths['json']} and {paths['md']}")
  return summaries


def _define_flags():
  """Flags are defined only when run as a script, so tests can import this module freely."""
  common_flags.define_data_flags(datasets=DEFAULT_DATASETS)
  common_flags.define_run_flags(output_dir="results/unlabeled_value",
                                trials=DEFAULT_SETTINGS["trials"])
  common_flags.define_eval_size_flag(DEFAULT_SETTINGS["eval_size"])
  common_flags.define_engine_flags(("num_steps", "num_frequencies", "unlabeled_batch_size",
                                    "step_size"))
  flags.adopt_module_key_flags(common_flags)
  flags.DEFINE_list("labeled_sizes", ["50", "100", "200", "500", "1000"], "Labeled sizes; "
                    "sizes the data do not allow are skipped (and listed).")
  flags.DEFINE_list("gammas", ["0", "0.25", "0.5", "0.75", "1"], "Gammas; must include 1.")
  flags.DEFINE_list("unlabeled_sizes", ["all"], "Unlabeled points per trial: ints and/or 'all' "
                    "(nested random subsets of the trial's unlabeled points).")
  flags.DEFINE_list("cv_lam", [str(v) for v in DEFAULT_SETTINGS["cv_lam"]], "lam grid of the CV.")
  flags.DEFINE_list("cv_sigma", [str(v) for v in DEFAULT_SETTINGS["cv_sigma"]],
                    "sigma grid of the CV.")
  flags.DEFINE_integer("cv_folds", 5, "Folds of the CV (at most the smallest class).")
  flags.DEFINE_float("min_cover_probability", 0.5, "Skip labeled sizes whose uniform draw has "
                     "every class with a lower probability.")
  flags.register_validator("cv_folds", lambda v: v >= 2, "--cv_folds must be an integer >= 2.")
  flags.register_validator("gammas", lambda v: all(0 <= float(g) <= 1 for g in v) and
                           1.0 in [float(g) for g in v],
                           "--gammas must lie in [0, 1] and include 1 (the reference).")


def main(argv):
  del argv
  step = FLAGS.step_size if FLAGS.step_size == "auto" else float(FLAGS.step_size)
  run_study(FLAGS.datasets, output_dir=FLAGS.output_dir,
            log=lambda line: print(line, flush=True), data_dir=FLAGS.data_dir,
            labeled_sizes=FLAGS.labeled_sizes, gammas=FLAGS.gammas,
            unlabeled_sizes=FLAGS.unlabeled_sizes, trials=FLAGS.trials, seed=FLAGS.seed,
            eval_size=FLAGS.eval_size, cv_lam=FLAGS.cv_lam, cv_sigma=FLAGS.cv_sigma,
            cv_folds=FLAGS.cv_folds, step_size=step, num_steps=FLAGS.num_steps,
            num_frequencies=FLAGS.num_frequencies,
            unlabeled_batch_size=FLAGS.unlabeled_batch_size,
            min_cover_probability=FLAGS.min_cover_probability)


if __name__ == "__main__":
  _define_flags()
  app.run(main)
