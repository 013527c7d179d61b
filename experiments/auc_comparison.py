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
identical for every method. Trial t's split, unlabeled subset and training key come from
``protocols.trial_key(seed, t)`` (``--trial_seeds=fold_in``, the default), so runs of different
seeds share no trial; ``--trial_seeds=offset`` uses the int seed ``--seed`` + t instead, the scheme
of the runs published in ``experiments/reproduction/`` (their commands name it), under which runs
whose seeds differ by less than ``--trials`` share trials.

Hyper-parameters are chosen once per dataset and method by k-fold cross-validation
(``qsg_jax.model_selection`` for QSG, ``qsg_jax.baselines.cross_validate`` for the others) on a
separate split (seed ``--cv_seed``) with ``--cv_unlabeled`` unlabeled points, then used in every
trial. ``--cv_grid=quick`` (default) searches lam in {1e-3, 2^-3} and sigma in {2^-3, 1} for every
method, gamma in {0, 0.5, 1} (PNU-AUC: eta in {-1, -0.5, 0, 0.5, 1}, the same weights 1 - |eta|
of the labeled pairs) and SVOREX's C in {1, 8} (flags --cv_lam, --cv_sigma, ... change them);
QSG's step size is fixed at ``--step_size`` unless ``--cv_step_size`` lists values to search (a
run that diverges in a fold scores NaN and is never chosen);
``--cv_grid=paper`` the papers' grid (lam, sigma in 2^-3..2^3, gamma step 0.1; QS3ORAO then
also chooses gamma per subproblem, as the ordinal paper does, by one coordinate pass after the
grid; the baselines' CV takes minutes per dataset with ``--cv_baseline_mode=spectral``, the
default); ``--cv_grid=fixed`` skips CV. For CV only, classes with fewer labeled points than folds
are merged into an ordinal neighbour (ESL has classes with one labeled point); the M- methods
then pick one setting for all splits instead of one per split.

With ``--exact_qsg`` (default) every trial also solves QSG's own objective exactly, with QSG's
chosen hyper-parameters (``qsg_jax.baselines.fit_exact_qsg``, "QS3ORAO-exact" / "QSG-S2AUC-exact"):
QSG minus it is the cost of the random-feature, stochastic approximation alone, and it minus
M-SAMULT the cost of one ranking function for all splits against k-1 independent ones.

Each finished unit (a dataset's CV of one method, one trial of every method) is written at once,
atomically, to --output_dir/cells/auc_comparison/, with auc_comparison.json marked incomplete
until the end; ``--resume``
continues an interrupted run from them and ends with the uninterrupted run's numbers (same flags
required; the finished units' timings are those of the interrupted run).

Writes auc_comparison.{json,md,csv,png} into --output_dir (atomically) and prints how far QSG's
mean AUC is from the better exact method's at the common size (within 0.01?), and QS3ORAO
against SVOREX. A real dataset whose files are missing is skipped with a message (and listed in
the outputs). The methods, their statistics and the box plots live in ``common.methods``.
"""

import dataclasses
from typing import Optional

import jax

from qsg_jax import data as data_lib
from experiments.common import cli
from experiments.common import methods as cm
from experiments.common import protocols
from experiments.common import reporting
from experiments.common import store as store_lib

DEFAULT_DATASETS = ("cod_rna", "ijcnn1", "skin", "dota2", "bank_marketing", "accelerometer",
                    "breast_cancer", "sgemm", "lev", "era", "esl", "swd")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The comparison's settings (one flag each)."""
  datasets: tuple[str, ...] = DEFAULT_DATASETS
  data_dir: Optional[str] = None
  output_dir: str = "results/auc_comparison"
  trials: int = 10
  num_labeled: Optional[int] = cli.setting(
      None, "Labeled points (unset: 200 binary, 500 ordinal, at most half the data).", lower=2)
  seed: int = cli.setting(0, "Seed of the run (see --trial_seeds).")
  trial_seeds: str = "fold_in"
  common_size: int = cli.setting(5000, "Unlabeled points every method trains on (the exact "
                                 "methods' size).", lower=1)
  full: bool = cli.setting(True, "Also run QSG on the whole unlabeled set.")
  eval_size: int = 20000
  cv_grid: str = cli.setting("quick", "Grid of the cross-validation (fixed: no CV, the settings "
                             "of methods.FIXED).", choices=("quick", "paper", "fixed"))
  cv_lam: tuple[float, ...] = cli.setting((1e-3, 0.125), "lam values of the quick grid.",
                                          lower=0.0)
  cv_sigma: tuple[float, ...] = cli.setting((0.125, 1.0), "sigma values of the quick grid.",
                                            positive=True)
  cv_gamma: tuple[float, ...] = cli.setting(
      (0.0, 0.5, 1.0), "gamma values of the quick grid (PNU-AUC searches eta = +-(1 - gamma): "
      "same PN weights).", lower=0.0, upper=1.0)
  cv_c: tuple[float, ...] = cli.setting((1.0, 8.0), "SVOREX C values of the quick grid.",
                                        positive=True)
  cv_unlabeled: int = cli.setting(1000, "Unlabeled points used in CV.", lower=1)
  cv_folds: int = cli.setting(5, "Folds of the cross-validation.", lower=2)
  cv_seed: int = cli.setting(1000, "Seed of the split used for CV (not a trial).")
  cv_baseline_mode: str = cli.setting(
      "spectral", "How the exact baselines' CV solves its systems (qsg_jax.baselines."
      "cross_validate's mode): spectral (one eigendecomposition per sigma, float64, exact ties "
      "for duplicate points) or the LU paths map / vmap (float32).",
      choices=("spectral", "map", "vmap"))
  num_steps: int = cli.ENGINE_DEFAULTS["num_steps"]
  num_frequencies: int = cli.ENGINE_DEFAULTS["num_frequencies"]
  unlabeled_batch_size: int = cli.ENGINE_DEFAULTS["unlabeled_batch_size"]
  step_size: cli.StepSize = cli.ENGINE_DEFAULTS["step_size"]
  cv_step_size: Optional[tuple[cli.StepSize, ...]] = cli.setting(
      None, "Step sizes the CV searches for QSG, for example 1,3 (unset: --step_size alone; the "
      "papers do not search it).", positive=True, words=("auto",))
  exact_qsg: bool = cli.setting(True, "Also solve QSG's own objective exactly in each trial, "
                                "with QSG's hyper-parameters (QS3ORAO-exact / QSG-S2AUC-exact).")


def run_dataset(name, settings, log=cli.log_line, on_trial=lambda: None, store=None):
  """Per-trial rows and the CV records of one dataset (``on_trial()`` after each trial).

  ``store``: a started ``store_lib.RunStore``; each method's CV and each trial are written to it
  at once and taken from it on a resumed run.
  """
  dataset = data_lib.load(name, data_dir=settings.data_dir)
  proto = protocols.protocol_for(dataset, settings.num_labeled)
  k, ordinal = proto.num_classes, proto.eval_on == "unlabeled"
  methods = cm.ORDINAL_METHODS if k > 2 or ordinal else cm.BINARY_METHODS
  qsg_method = next(m for m in methods if cm.is_qsg(m))
  log(f"\n{name}: {dataset.x.shape[0]} points, d={dataset.x.shape[1]}, k={k}, "
      f"{proto.num_labeled} labeled; CV ({settings.cv_grid}) on "
      f"{settings.cv_unlabeled} unlabeled at most")
  cv_data = protocols.cv_data(dataset, proto, settings.cv_seed, settings.cv_unlabeled)
  chosen, records = {}, []
  for method in methods:

    def select(method=method):
      best, record = cm.select_hyperparams(method, cv_data, k, settings)
      return {"best": best, "record": dict(record, dataset=name)}
    cell = store_lib.cached(store, f"{name}-cv-{method}", select)
    chosen[method] = cell["best"]
    records.append(cell["record"])
    record = cell["record"]
    log(f"  CV {method}: {chosen[method]} "
        + ("(--cv_grid=fixed: set, not cross-validated)" if "best_score" not in record else
           f"(CV AUC {record['best_score']:.4f}, {record.get('seconds', 0.0):.0f} s)"))
  if settings.exact_qsg:
    methods = methods[:1] + (cm.EXACT_OF[qsg_method],) + methods[1:]
    chosen[cm.EXACT_OF[qsg_method]] = chosen[qsg_method]
  rows = []
  for t in range(settings.trials):
    trial_rows = store_lib.cached(
        store, f"{name}-trial-{t}",
        lambda t=t: run_trial(dataset, proto, methods, chosen, settings, t))
    rows += [{"dataset": name, **r} for r in trial_rows]
    line = ", ".join(f"{r['method']}[{r['setting']}] {r['auc']:.4f}"
                     for r in trial_rows)
    fewest = min((r["splits_scored"] for r in trial_rows if r["status"] == "ok"), default=k - 1)
    if fewest < k - 1:
      line += (f" (mean over {fewest} of {k - 1} splits: a class is missing from the "
               "evaluation points)")
    log(f"  trial {t + 1}/{settings.trials}: {line}")
    on_trial()
  return rows, records


def run_trial(dataset, proto, methods, chosen, settings, t):
  """The rows of trial ``t``: every method on the same split (``comparison_trial_seeds``)."""
  k, ordinal = proto.num_classes, proto.eval_on == "unlabeled"
  seeds = protocols.comparison_trial_seeds(settings.seed, t, settings.trial_seeds)
  trial = protocols.make_trial(dataset, proto, seeds.split,
                               eval_size=None if ordinal else settings.eval_size)
  n_u = trial.x_unlabeled.shape[0]
  order = seeds.subset_rng.permutation(n_u)
  num_eval = settings.eval_size or None   # 0: every point
  common = order[:min(settings.common_size, n_u)]
  if ordinal:   # make_trial scored all unlabeled points: y_eval are their labels
    y_u = trial.y_eval
    evals = {"common": (trial.x_unlabeled[common], y_u[common]),
             "full": (trial.x_unlabeled[order[:num_eval]], y_u[order[:num_eval]])}
  else:
    evals = {"common": (trial.x_eval, trial.y_eval), "full": (trial.x_eval, trial.y_eval)}
  sizes = {"common": common.size, "full": n_u}
  unlabeled = {"common": trial.x_unlabeled[common], "full": trial.x_unlabeled}
  runs_of = ["common"] + (["full"] if settings.full and n_u > common.size else [])
  rows = []
  for method in methods:
    for setting in runs_of if cm.is_qsg(method) else ["common"]:
      evaluate = runs_of if method == "SVOREX" else [setting]
      aucs, seconds, status = cm.fit_and_score(
          method, chosen[method], k, (trial.x_labeled, trial.y_labeled, unlabeled[setting]),
          [evals[s] for s in evaluate], settings, seeds.fit_key)
      for s, (auc, scored) in zip(evaluate, aucs):
        rows.append({"trial": t, "seed": seeds.seed, "method": method,
                     "setting": s, "num_unlabeled": sizes[s] if method != "SVOREX" else 0,
                     "num_eval": int(evals[s][0].shape[0]), "auc": auc,
                     "splits_scored": scored, "num_splits": k - 1,
                     "train_time_s": seconds, "status": status})
  return rows


def run(settings: Settings, log=cli.log_line):
  """Runs every dataset and writes auc_comparison.{json,md,csv,png} into the output directory.

  A real dataset whose files are missing (and cannot be downloaded) is skipped with a message,
  and listed under "skipped" in the outputs.

  Returns:
    The JSON payload (dict with "summary", "closeness", "supervised", "rows", ...).

  Raises:
    cli.UserError: no dataset could be run.
    store_lib.StoreError, PermissionError: the output directory cannot be used as asked.
  """
  try:   # sizes the data cannot give: said before any run store starts
    protocols.check_num_labeled(settings.datasets, settings.num_labeled, settings.data_dir)
  except ValueError as e:
    raise cli.UserError(str(e)) from None
  store = store_lib.RunStore(settings.output_dir, "auc_comparison")
  store.start(settings.as_dict(exclude=cli.RUN_OPTIONS), resume=settings.resume,
              overwrite=settings.overwrite)
  log(f"{len(settings.datasets)} datasets, {settings.trials} trials; devices {jax.devices()}" +
      (f"; resuming ({len(store.cells)} finished units)" if settings.resume else ""))
  bar = reporting.Progress(len(settings.datasets) * settings.trials, unit="trials",
                           enabled=settings.progress, log=log)
  rows, records, skipped = [], [], []
  for i, name in enumerate(settings.datasets):
    bar.update(i * settings.trials)
    try:
      more_rows, more_records = run_dataset(name, settings, bar.write,
                                            on_trial=lambda: bar.update(bar.done + 1),
                                            store=store)
    except data_lib.DataNotFoundError as e:
      skipped.append({"dataset": name, "reason": str(e).splitlines()[0]})
      bar.write(f"\n{name}: SKIPPED, data files not found ({skipped[-1]['reason']})")
      continue
    rows += more_rows
    records += more_records
  bar.close()
  if not rows:
    raise cli.UserError(f"no dataset of {list(settings.datasets)} could be run: {skipped}")
  summary = cm.summarize(rows)
  closeness = cm.closeness_checks(summary)
  supervised = cm.supervised_checks(rows)
  for line in cm.report_lines(summary, closeness, supervised):
    log(line)
  for s in skipped:
    log(f"skipped {s['dataset']}: {s['reason']}")
  columns = ["dataset", "method", "setting", "num_unlabeled", "auc_mean", "auc_std",
             "trials_ok", "splits_scored", "train_time_s", "num_eval"]
  payload = {"cv": records, "summary": summary, "closeness": closeness,
             "supervised": supervised, "skipped": skipped, "rows": rows}
  cv_rows = [{"dataset": r["dataset"], "method": r["method"], "cv": r["cv"],
              "best": str(r["best"]), "cv_auc": r.get("best_score"), "folds": r.get("num_folds"),
              "seconds": r.get("seconds")} for r in records]
  sections = [(None, summary, columns),
              (f"QSG vs the better exact method at the common size (close: >= "
               f"-{cm.TOLERANCE})", closeness, None)]
  if supervised:
    sections.append(("QS3ORAO minus SVOREX (paired over trials)", supervised, None))
  sections.append(("Hyper-parameters chosen by cross-validation", cv_rows, None))
  if skipped:
    sections.append(("Skipped (data files not found)", skipped, None))
  png = cm.plot(rows, store.dir / "auc_comparison.png")
  paths = store.finish(payload, sections, title="AUC over trials (mean and std)")
  log(f"wrote {paths['json']}, {paths['md']}, {paths['csv']} and {png}")
  return dict(payload, settings=store.settings)


if __name__ == "__main__":
  cli.script(Settings, run)
