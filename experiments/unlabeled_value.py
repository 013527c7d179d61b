r"""The value of unlabeled data, measured: AUC(gamma) - AUC(gamma = 1), paired over trials.

  QSG_JAX_DATA=../shared/data python -m experiments.unlabeled_value --datasets=lev,cod_rna
  python -m experiments.unlabeled_value --datasets=sgemm --unlabeled_sizes=1000,10000,all

For every dataset and labeled size n_l (default 50, 100, 200, 500, 1000), lam and sigma are chosen
once by k-fold cross-validation at gamma = 1 (supervised) on a separate split that is never a
trial (``protocols.CV_TRIAL``; grid ``--cv_lam`` x ``--cv_sigma``, the papers' 2^-3..2^3 plus
smaller lam), then held fixed. Each trial t (key ``protocols.trial_key(seed, t)``, split by
``protocols.make_trial`` with the dataset's protocol at n_l labeled points) trains QSG-S2AUC /
QS3ORAO at every gamma of ``--gammas`` on the same labeled points, the same unlabeled points
(the first n_u of a permutation drawn from the trial's key: nested subsets for
``--unlabeled_sizes``), the same training key and the same random features and mini-batches,
and scores every model on the same evaluation points (binary: test data; ordinal: the unlabeled
points, ordinal AUC of Eq. 2). The gammas of a trial are one vmapped training
(``qsg_jax.model_selection.fit_over_grid``): one compilation and shared features for all of them.

Step size: with ``--step_size=auto`` (default) each gamma gets its own auto step (the eta0
``qsg_jax.fit(step_size="auto")`` would use for that gamma; it depends on gamma through the
Hessian of the risk), so every vmapped run equals the separate ``qsg_jax.fit`` call to float32
rounding. A run whose scores diverge is reported as diverged, its AUC is None, and its trial is
left out of that gamma's differences.

Labeled sizes are run only where the data allow: at most half of the points a labeled set is
drawn from, and every class present in a uniform draw with probability >= 0.5 (``plan_sizes``);
the others are listed as skipped with the reason.

Layout of ``--output_dir`` (every file written atomically; ``--resume`` continues from the
finished cells, after checking that the settings the numbers depend on are unchanged; labeled
sizes, unlabeled sizes and trials may be added)::

  DATASET/unlabeled_value.{json,md,csv,png}   the dataset's run: settings while running, then
                                              its summary, table and figure
  DATASET/cells/unlabeled_value/cv_nl_00200.json   the CV choice for 200 labeled points
  DATASET/cells/unlabeled_value/nl_00200_nu_0001000_t_003.json   one trial at (200, 1000)
  unlabeled_value.{json,md}                   every finished dataset in the directory
"""

import dataclasses
import json
import math
import pathlib
import time
from typing import Optional, Union

import jax
import numpy as np

from qsg_jax import data as data_lib
from qsg_jax import model_selection
from experiments import unlabeled_value_report as report
from experiments.common import cli
from experiments.common import methods
from experiments.common import protocols
from experiments.common import reporting
from experiments.common import store as store_lib

DEFAULT_DATASETS = ("lev", "era", "swd", "esl", "breast_cancer", "cod_rna", "ijcnn1", "skin",
                    "bank_marketing", "accelerometer", "sgemm")
# Settings that select which cells run; the others fix the numbers of a cell.
_SELECTION = ("datasets", "labeled_sizes", "unlabeled_sizes", "trials")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The study's settings (one flag each)."""
  datasets: tuple[str, ...] = DEFAULT_DATASETS
  data_dir: Optional[str] = None
  output_dir: str = "results/unlabeled_value"
  labeled_sizes: tuple[int, ...] = cli.setting(
      (50, 100, 200, 500, 1000), "Labeled sizes; sizes the data do not allow are skipped (and "
      "listed).", lower=2, nonempty=True)
  gammas: tuple[float, ...] = cli.setting((0.0, 0.25, 0.5, 0.75, 1.0), "Gammas; must include 1 "
                                          "(the reference).", lower=0.0, upper=1.0)
  unlabeled_sizes: tuple[Union[int, str], ...] = cli.setting(
      ("all",), "Unlabeled points per trial: ints and/or 'all' (nested random subsets of the "
      "trial's unlabeled points).", lower=1, words=("all",), nonempty=True)
  trials: int = 10
  seed: int = 0
  eval_size: int = 20000
  cv_lam: tuple[float, ...] = cli.setting((1e-4, 1e-3, 1e-2, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
                                          "lam grid of the CV.", lower=0.0)
  cv_sigma: tuple[float, ...] = cli.setting((0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
                                            "sigma grid of the CV.", positive=True)
  cv_folds: int = cli.setting(5, "Folds of the CV (at most the smallest class).", lower=2)
  step_size: cli.StepSize = cli.ENGINE_DEFAULTS["step_size"]
  num_steps: int = cli.ENGINE_DEFAULTS["num_steps"]
  num_frequencies: int = cli.ENGINE_DEFAULTS["num_frequencies"]
  unlabeled_batch_size: int = cli.ENGINE_DEFAULTS["unlabeled_batch_size"]
  min_cover_probability: float = cli.setting(0.5, "Skip labeled sizes whose uniform draw has "
                                             "every class with a lower probability.", lower=0.0,
                                             upper=1.0)

  def __post_init__(self):
    super().__post_init__()
    if 1.0 not in self.gammas:
      raise cli.UserError(f"gammas must contain 1.0 (the supervised reference); received "
                          f"{list(self.gammas)}.")

  def engine(self):
    """The fixed hyper-parameters of every fit (every labeled point each step)."""
    return dict(step_size=self.step_size, num_steps=self.num_steps,
                num_frequencies=self.num_frequencies,
                unlabeled_batch_size=self.unlabeled_batch_size, labeled_batch_size=None)


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


def select_lam_sigma(dataset, proto, settings, log=cli.log_line):
  """lam and sigma chosen by CV at gamma = 1 on a split that is never a trial; the CV record.

  The split is trial ``protocols.CV_TRIAL`` of the seed (the next keys below it when its labeled
  points hold a class with fewer than two points after merging rare ordinal classes). Classes
  with fewer labeled points than folds are merged into an ordinal neighbour for the CV only, and
  the folds are at most the smallest class size.
  """
  for attempt in range(50):
    cv_key = protocols.trial_key(settings.seed, protocols.CV_TRIAL - attempt)
    split = protocols.make_trial(dataset, proto, cv_key, eval_size=1)
    y_cv = methods.merge_rare_classes(split.y_labeled, settings.cv_folds)
    if np.bincount(y_cv).min() >= 2:
      break
  else:
    raise ValueError(f"no CV split of {dataset.name} at {proto.num_labeled} labeled points has "
                     "two points of every class; use more labeled points.")
  folds = int(min(settings.cv_folds, np.bincount(y_cv).min()))
  grid = {"lam": settings.cv_lam, "sigma": settings.cv_sigma, "gamma": [1.0],
          "step_size": [settings.step_size]}
  start = time.perf_counter()
  result = model_selection.cross_validate(
      split.x_labeled, y_cv, None, grid=grid, num_folds=folds, seed=settings.seed,
      key=settings.seed, num_steps=settings.num_steps, num_frequencies=settings.num_frequencies,
      unlabeled_batch_size=settings.unlabeled_batch_size)
  record = {"lam": result.best["lam"], "sigma": result.best["sigma"], "cv_auc": result.best_score,
            "num_folds": folds, "cv_classes": int(y_cv.max()) + 1, "cv_attempt": attempt,
            "seconds": time.perf_counter() - start}
  log(f"  CV at {proto.num_labeled} labeled (gamma = 1, {folds} folds, "
      f"{record['seconds']:.0f} s): lam {record['lam']:g}, sigma {record['sigma']:g}, "
      f"CV AUC {record['cv_auc']:.4f}")
  return record


def unlabeled_sizes_of(sizes, available):
  """Sorted distinct ints of ``sizes`` ("all" = ``available``; larger ones are capped)."""
  return sorted({available if s == "all" else min(int(s), available) for s in sizes})


def run_cell(trial, order, n_u, choice, proto, settings, key):
  """One trial at ``n_u`` unlabeled points: every gamma in one vmapped fit, scored; a dict."""
  start = time.perf_counter()
  out = model_selection.fit_over_grid(
      trial.x_labeled, trial.y_labeled, trial.x_unlabeled[order[:n_u]], trial.x_eval,
      {"gamma": list(settings.gammas)}, key=protocols.stream_key(key, "training"),
      num_classes=proto.num_classes, sigma=choice["sigma"], lam=choice["lam"],
      **settings.engine())
  aucs, splits = [], []
  for g in range(len(settings.gammas)):
    auc, scored = (None, 0) if out["diverged"][g] else methods.scored_auc(
        out["scores"][g], trial.y_eval, proto.num_classes)
    aucs.append(auc)
    splits.append(scored)
  return {"num_labeled": proto.num_labeled, "num_unlabeled": int(n_u),
          "gammas": list(settings.gammas), "auc": aucs, "splits_scored": splits,
          "diverged": out["diverged"].tolist(), "divergence_messages": out["messages"],
          "eta0": out["eta0"].tolist(), "max_abs_score": out["max_abs_score"].tolist(),
          "lam": choice["lam"], "sigma": choice["sigma"], "num_eval": int(trial.x_eval.shape[0]),
          "evaluated_on": trial.eval_description, "seconds": time.perf_counter() - start}


def run_dataset(name, settings, log=cli.log_line):
  """Runs (or resumes) every cell of one dataset and writes its summary; returns the summary."""
  dataset = data_lib.load(name, data_dir=settings.data_dir)
  base = protocols.protocol_for(dataset)
  usable, skipped = plan_sizes(dataset, settings.labeled_sizes, settings.min_cover_probability)
  if not usable:   # before any run store: a run of no cells would state a conclusion
    raise cli.UserError(f"{name}: no --labeled_sizes value can be measured (" + "; ".join(
        f"{s['num_labeled']}: {s['reason']}" for s in skipped) + "). Pass smaller sizes.")
  store = store_lib.RunStore(pathlib.Path(settings.output_dir) / name, "unlabeled_value")
  store.start(settings.as_dict(exclude=cli.RUN_OPTIONS), resume=settings.resume,
              overwrite=settings.overwrite, selection=_SELECTION)
  log(f"\n{name}: {dataset.x.shape[0]} points, d={dataset.x.shape[1]}, k={base.num_classes}; "
      f"labeled sizes {usable}" + "".join(f"; skipped {s['num_labeled']}: {s['reason']}"
                                          for s in skipped))
  start, cells, cvs = time.perf_counter(), [], {}
  for n_l in usable:
    proto = protocols.protocol_for(dataset, num_labeled=n_l)
    cvs[n_l] = store.cached(f"cv_nl_{n_l:05d}",
                            lambda proto=proto: select_lam_sigma(dataset, proto, settings, log))
    for t in range(settings.trials):
      key = protocols.trial_key(settings.seed, t)
      trial = protocols.make_trial(dataset, proto, key, settings.eval_size or None)
      available = trial.x_unlabeled.shape[0]
      order = protocols.stream_rng(key, "unlabeled_order").permutation(available)
      for n_u in unlabeled_sizes_of(settings.unlabeled_sizes, available):
        name_ = f"nl_{n_l:05d}_nu_{n_u:07d}_t_{t:03d}"
        fresh = not store.has(name_)
        cell = store.cached(name_, lambda n_u=n_u, t=t, trial=trial, order=order, key=key: dict(
            run_cell(trial, order, n_u, cvs[n_l], proto, settings, key), trial=t))
        if fresh:
          aucs = ", ".join("div" if a is None else f"{a:.4f}" for a in cell["auc"])
          log(f"  {n_l} labeled, {n_u} unlabeled, trial {t + 1}/{settings.trials}: AUC at gamma "
              f"{list(settings.gammas)}: {aucs} ({cell['seconds']:.1f} s)")
        cells.append(cell)
  rows = report.summarize(cells, settings.gammas)
  summary = {"dataset": name, "task": base.task, "num_classes": base.num_classes,
             "metric": "AUC" if base.num_classes == 2 else "ordinal AUC",
             "evaluated_on": cells[0]["evaluated_on"] if cells else None,
             "labeled_sizes": usable, "skipped": skipped, "cv": cvs, "rows": rows,
             "conclusion": report.conclusion_lines(name, rows),
             "seconds": time.perf_counter() - start, "cells": cells}
  write_dataset_summary(store, summary)
  return summary


def write_dataset_summary(store, summary):
  """DATASET/unlabeled_value.{json,md,csv,png} of one dataset's summary (``store`` finished)."""
  name = summary["dataset"]
  cv_rows = [dict(num_labeled=n_l, **{k: v for k, v in c.items()})
             for n_l, c in summary["cv"].items()]
  sections = [(None, report.table_rows(summary["rows"]), None),
              ("Paired differences (one row per gamma)", summary["rows"], None),
              ("lam, sigma chosen by CV at gamma = 1 (held fixed across gammas)", cv_rows, None)]
  if summary["skipped"]:
    sections.append(("Labeled sizes skipped", summary["skipped"], None))
  sections.append(("Conclusion", [{"line": s} for s in summary["conclusion"]], None))
  if summary["rows"]:
    report.plot_dataset(summary["rows"], name, summary["metric"],
                        store.dir / "unlabeled_value.png")
  store.finish(summary, sections, title=f"{name}: {summary['metric']}(gamma) and "
               f"{summary['metric']}(gamma) - {summary['metric']}(1) +- paired SE (scored on "
               f"{summary['evaluated_on']})")


def write_combined(output_dir):
  """output_dir/unlabeled_value.{json,md}: every finished dataset found in ``output_dir``."""
  summaries = []
  for path in sorted(pathlib.Path(output_dir).glob("*/unlabeled_value.json")):
    stored = json.loads(path.read_text())
    if stored.get("complete") and "rows" in stored:
      summaries.append(stored)
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


def run(settings: Settings, log=cli.log_line):
  """Runs every dataset (writing each summary) and the combined report; returns the summaries.

  Raises:
    store_lib.StoreError: settings that differ from a dataset's stored run, or a stored run
      that would be replaced without --resume / --overwrite.
  """
  store_lib.check_output_dir(settings.output_dir)
  log(f"devices {jax.devices()}")
  summaries = []
  for name in settings.datasets:
    try:
      summaries.append(run_dataset(name, settings, log))
    except data_lib.DataNotFoundError as e:
      log(f"\n{name}: SKIPPED, data files not found ({str(e).splitlines()[0]})")
      continue
    for line in summaries[-1]["conclusion"]:
      log(line)
    log(f"{name} done in {summaries[-1]['seconds']:.0f} s")
  paths = write_combined(settings.output_dir)
  log(f"wrote {paths['json']} and {paths['md']}")
  return summaries


if __name__ == "__main__":
  cli.script(Settings, run)
