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
atomically, to --output_dir/cells/, with run.json marked incomplete until the end; ``--resume``
continues an interrupted run from them and ends with the uninterrupted run's numbers (same flags
required; the finished units' timings are those of the interrupted run).

Writes auc_comparison.{json,md,csv,png} into --output_dir (atomically) and prints the issue's
checks: QSG mean AUC within 0.01 of the better exact method at the common size, and QS3ORAO
against SVOREX. A real dataset whose files are missing is skipped with a message (and listed in
the outputs).
``run_comparison`` does the work with plain keyword arguments (flags are defined only when this
runs as a script). The methods live in ``comparison_methods``, the statistics, checks and box
plots in ``comparison_checks``.
"""

from absl import app
from absl import flags
import jax
import numpy as np

from qsg_jax import data as data_lib
from qsg_jax import defaults
from experiments import common_flags
from experiments import comparison_checks as checks
from experiments import comparison_methods as cm
from experiments import progress as progress_lib
from experiments import protocols
from experiments import reporting
from experiments import run_store

FLAGS = flags.FLAGS

DEFAULT_DATASETS = ("cod_rna", "ijcnn1", "skin", "dota2", "bank_marketing", "accelerometer",
                    "breast_cancer", "sgemm", "lev", "era", "esl", "swd")
# Settings of ``run_comparison`` (one flag each, same name, when run as a script).
DEFAULT_SETTINGS = {
    "data_dir": None,           # data directory (default $QSG_JAX_DATA)
    "trials": 10,               # trials (random splits) per dataset
    "num_labeled": None,        # labeled points (default 200 binary, 500 ordinal, <= half the data)
    "seed": 0,                  # seed of the run (see trial_seeds)
    "trial_seeds": "fold_in",   # trial t: "fold_in" trial_key(seed, t), "offset" int seed + t
    "common_size": 5000,        # unlabeled points every method trains on (the exact methods' size)
    "full": True,               # also run QSG on the whole unlabeled set
    "eval_size": 20000,         # score on at most this many points (0: all)
    "cv_grid": "quick",         # "quick", "paper" or "fixed" (no CV)
    "cv_lam": [1e-3, 0.125],    # lam values of the quick grid
    "cv_sigma": [0.125, 1.0],   # sigma values of the quick grid
    "cv_gamma": [0.0, 0.5, 1.0],  # gamma values of the quick grid (PNU-AUC: eta = +-(1 - gamma))
    "cv_c": [1.0, 8.0],         # SVOREX C values of the quick grid
    "cv_unlabeled": 1000,       # unlabeled points used in CV
    "cv_folds": 5,              # folds of the cross-validation
    "cv_seed": 1000,            # seed of the split used for CV (not a trial)
    "cv_baseline_mode": "spectral",  # how the exact baselines' CV solves (baselines.cross_validate)
    "num_steps": defaults.NUM_STEPS,              # QSG iterations T
    "num_frequencies": defaults.NUM_FREQUENCIES,  # QSG frequencies per block
    "unlabeled_batch_size": defaults.UNLABELED_BATCH_SIZE,  # QSG unlabeled points per step
    "step_size": defaults.STEP_SIZE,  # QSG initial step (the CV's only value unless cv_step_size)
    "cv_step_size": None,       # step sizes the CV searches for QSG (None: step_size alone)
    "exact_qsg": True,          # also solve QSG's objective exactly (its hyper-parameters)
}


def run_dataset(name, args, log=print, on_trial=lambda: None, store=None):
  """Per-trial rows and the CV records of one dataset (``on_trial()`` after each trial).

  ``store``: a started ``run_store.CellStore``; each method's CV and each trial are written to it
  at once and taken from it on a resumed run.
  """
  dataset = data_lib.load(name, data_dir=args["data_dir"])
  proto = protocols.protocol_for(dataset, args["num_labeled"])
  k, ordinal = proto.num_classes, proto.eval_on == "unlabeled"
  methods = cm.ORDINAL_METHODS if k > 2 or ordinal else cm.BINARY_METHODS
  qsg_method = next(m for m in methods if cm.is_qsg(m))
  log(f"\n{name}: {dataset.x.shape[0]} points, d={dataset.x.shape[1]}, k={k}, "
      f"{proto.num_labeled} labeled; CV ({args['cv_grid']}) on "
      f"{args['cv_unlabeled']} unlabeled at most")
  cv_data = _cv_data(dataset, proto, args)
  chosen, records = {}, []
  for method in methods:

    def select(method=method):
      best, record = cm.select_hyperparams(method, cv_data, k, args)
      return {"best": best, "record": dict(record, dataset=name)}
    cell = run_store.cached(store, f"{name}-cv-{method}", select)
    chosen[method] = cell["best"]
    records.append(cell["record"])
    log(f"  CV {method}: {chosen[method]} (CV AUC "
        f"{cell['record'].get('best_score', float('nan')):.4f}, "
        f"{cell['record'].get('seconds', 0.0):.0f} s)")
  if args["exact_qsg"]:
    methods = methods[:1] + (cm.EXACT_OF[qsg_method],) + methods[1:]
    chosen[cm.EXACT_OF[qsg_method]] = chosen[qsg_method]
  rows = []
  for t in range(args["trials"]):
    trial_rows = run_store.cached(
        store, f"{name}-trial-{t}",
        lambda t=t: run_trial(dataset, proto, methods, chosen, args, t))
    rows += [{"dataset": name, **r} for r in trial_rows]
    line = ", ".join(f"{r['method']}[{r['setting']}] {r['auc']:.4f}"
                     for r in trial_rows)
    fewest = min((r["splits_scored"] for r in trial_rows if r["status"] == "ok"), default=k - 1)
    if fewest < k - 1:
      line += (f" (mean over {fewest} of {k - 1} splits: a class is missing from the "
               "evaluation points)")
    log(f"  trial {t + 1}/{args['trials']}: {line}")
    on_trial()
  return rows, records


def _cv_data(dataset, proto, args):
  """(labeled x, labeled y, unlabeled x) of the separate CV split (seed ``cv_seed``)."""
  cv_trial = protocols.make_trial(dataset, proto, args["cv_seed"], eval_size=1)
  cv_u = cv_trial.x_unlabeled[np.random.default_rng(args["cv_seed"]).permutation(
      cv_trial.x_unlabeled.shape[0])[:args["cv_unlabeled"]]]
  return cv_trial.x_labeled, cv_trial.y_labeled, cv_u


def run_trial(dataset, proto, methods, chosen, args, t):
  """The rows of trial ``t``: every method on the same split (``comparison_trial_seeds``)."""
  k, ordinal = proto.num_classes, proto.eval_on == "unlabeled"
  seeds = protocols.comparison_trial_seeds(args["seed"], t, args["trial_seeds"])
  trial = protocols.make_trial(dataset, proto, seeds.split,
                               eval_size=None if ordinal else args["eval_size"])
  n_u = trial.x_unlabeled.shape[0]
  order = seeds.subset_rng.permutation(n_u)
  num_eval = args["eval_size"] or None   # 0: every point
  common = order[:min(args["common_size"], n_u)]
  if ordinal:   # make_trial scored all unlabeled points: y_eval are their labels
    y_u = trial.y_eval
    evals = {"common": (trial.x_unlabeled[common], y_u[common]),
             "full": (trial.x_unlabeled[order[:num_eval]], y_u[order[:num_eval]])}
  else:
    evals = {"common": (trial.x_eval, trial.y_eval), "full": (trial.x_eval, trial.y_eval)}
  sizes = {"common": common.size, "full": n_u}
  unlabeled = {"common": trial.x_unlabeled[common], "full": trial.x_unlabeled}
  settings = ["common"] + (["full"] if args["full"] and n_u > common.size else [])
  rows = []
  for method in methods:
    runs = settings if cm.is_qsg(method) else ["common"]
    for setting in runs:
      evaluate = settings if method == "SVOREX" else [setting]
      aucs, seconds, status = cm.fit_and_score(
          method, chosen[method], k, (trial.x_labeled, trial.y_labeled, unlabeled[setting]),
          [evals[s] for s in evaluate], args, seeds.fit_key)
      for s, (auc, scored) in zip(evaluate, aucs):
        rows.append({"trial": t, "seed": seeds.seed, "method": method,
                     "setting": s, "num_unlabeled": sizes[s] if method != "SVOREX" else 0,
                     "num_eval": int(evals[s][0].shape[0]), "auc": auc,
                     "splits_scored": scored, "num_splits": k - 1,
                     "train_time_s": seconds, "status": status})
  return rows


def run_comparison(datasets, *, output_dir, log=print, show_progress=False, resume=False,
                   **settings):
  """Runs every dataset and writes auc_comparison.{json,md,csv,png} into ``output_dir``.

  Args:
    datasets: names for ``qsg_jax.data.load``; a real dataset whose files are missing (and cannot
      be downloaded) is skipped with a message, and listed under "skipped" in the outputs.
    output_dir: directory of the outputs (created).
    log: callable(str) for progress lines.
    show_progress: a progress bar with ETA over the trials on stderr.
    resume: continue the interrupted run in ``output_dir`` (same datasets and settings): its
      finished CV selections and trials are reused, the rest computed.
    **settings: overrides of ``DEFAULT_SETTINGS`` (same names).

  Returns:
    The JSON payload (dict with "summary", "closeness", "supervised", "rows", ...).

  Raises:
    ValueError: an unknown setting, or no dataset could be run.
    PermissionError: ``output_dir`` is not writable (checked before any training).
    run_store.ResumeError: ``resume`` with nothing to resume or other settings, or an
      unfinished run in ``output_dir`` without ``resume``.
  """
  unknown = sorted(set(settings) - set(DEFAULT_SETTINGS))
  if unknown:
    raise ValueError(f"unknown settings {unknown}; expected some of {sorted(DEFAULT_SETTINGS)}.")
  if settings.get("cv_grid", "quick") not in ("quick", "paper", "fixed"):
    raise ValueError(f"cv_grid must be 'quick', 'paper' or 'fixed'; received "
                     f"{settings['cv_grid']!r}.")
  if settings.get("trial_seeds", "fold_in") not in protocols.TRIAL_SEEDS:
    raise ValueError(f"trial_seeds must be one of {protocols.TRIAL_SEEDS}; received "
                     f"{settings['trial_seeds']!r}.")
  args = dict(DEFAULT_SETTINGS, **settings)
  for name in ("cv_lam", "cv_sigma", "cv_gamma", "cv_c"):
    args[name] = [float(v) for v in args[name]]
  store = run_store.CellStore(output_dir)
  store.start({"datasets": list(datasets), **args}, resume)
  log(f"settings: {args}; devices {jax.devices()}" +
      (f"; resuming ({len(store.cells)} finished units)" if resume else ""))
  bar = progress_lib.ProgressBar(len(datasets) * args["trials"], unit="trials",
                                 enabled=show_progress)
  rows, records, skipped = [], [], []
  for i, name in enumerate(datasets):
    bar.update(i * args["trials"])
    try:
      more_rows, more_records = run_dataset(name, args, log,
                                            on_trial=lambda: bar.update(bar.done + 1),
                                            store=store)
    except data_lib.DataNotFoundError as e:
      skipped.append({"dataset": name, "reason": str(e).splitlines()[0]})
      log(f"\n{name}: SKIPPED, data files not found ({skipped[-1]['reason']})")
      continue
    rows += more_rows
    records += more_records
  bar.close()
  if not rows:
    raise ValueError(f"no dataset of {list(datasets)} could be run: {skipped}")
  summary = checks.summarize(rows)
  closeness = checks.closeness_checks(summary)
  supervised = checks.supervised_checks(rows)
  for line in checks.report_lines(summary, closeness, supervised):
    log(line)
  for s in skipped:
    log(f"skipped {s['dataset']}: {s['reason']}")
  columns = ["dataset", "method", "setting", "num_unlabeled", "auc_mean", "auc_std",
             "trials_ok", "splits_scored", "train_time_s", "num_eval"]
  payload = {"settings": args, "cv": records, "summary": summary, "closeness": closeness,
             "supervised": supervised, "skipped": skipped, "rows": rows}
  cv_rows = [{"dataset": r["dataset"], "method": r["method"], "cv": r["cv"],
              "best": str(r["best"]), "cv_auc": r.get("best_score"), "folds": r.get("num_folds"),
              "seconds": r.get("seconds")} for r in records]
  sections = [(None, summary, columns),
              (f"QSG vs the better exact method at the common size (check: >= "
               f"-{checks.TOLERANCE})", closeness, None)]
  if supervised:
    sections.append(("QS3ORAO minus SVOREX (paired over trials)", supervised, None))
  sections.append(("Hyper-parameters chosen by cross-validation", cv_rows, None))
  if skipped:
    sections.append(("Skipped (data files not found)", skipped, None))
  paths = reporting.write_report(output_dir, "auc_comparison", payload, sections,
                                 title="AUC over trials (mean and std)")
  png = f"{output_dir}/auc_comparison.png"
  checks.plot(rows, png)
  store.finish_cells()
  log(f"wrote {paths['json']}, {paths['md']}, {paths['csv']} and {png}")
  return payload


# The flags of the engine's hyper-parameters this script takes (the CV chooses sigma, lam, gamma).
ENGINE_FLAGS = ("num_steps", "num_frequencies", "unlabeled_batch_size", "step_size")


def _define_flags():
  """Flags are defined only when run as a script, so tests can import this module freely."""
  common_flags.define_data_flags(datasets=DEFAULT_DATASETS)
  common_flags.define_run_flags(output_dir="results/auc_comparison",
                                trials=DEFAULT_SETTINGS["trials"],
                                seed_help="Seed of the run (see --trial_seeds).")
  common_flags.define_trial_seeds_flag()
  common_flags.define_resume_flag()
  common_flags.define_eval_size_flag(DEFAULT_SETTINGS["eval_size"])
  common_flags.define_engine_flags(ENGINE_FLAGS)
  flags.adopt_module_key_flags(common_flags)   # --help lists the shared flags too
  flags.DEFINE_integer("num_labeled", None, "Labeled points (unset: 200 binary, 500 ordinal, "
                       "at most half the data).")
  flags.DEFINE_integer("common_size", 5000, "Unlabeled points every method trains on (the exact "
                       "methods' size).")
  flags.DEFINE_bool("full", True, "Also run QSG on the whole unlabeled set.")
  flags.DEFINE_enum("cv_grid", "quick", ["quick", "paper", "fixed"], "Grid of the "
                    "cross-validation (fixed: no CV, the settings of FIXED).")
  flags.DEFINE_list("cv_lam", ["0.001", "0.125"], "lam values of the quick grid.")
  flags.DEFINE_list("cv_sigma", ["0.125", "1.0"], "sigma values of the quick grid.")
  flags.DEFINE_list("cv_gamma", ["0.0", "0.5", "1.0"], "gamma values of the quick grid (PNU-AUC "
                    "searches eta = +-(1 - gamma): same PN weights).")
  flags.DEFINE_list("cv_c", ["1.0", "8.0"], "SVOREX C values of the quick grid.")
  flags.DEFINE_integer("cv_unlabeled", 1000, "Unlabeled points used in CV.")
  flags.DEFINE_integer("cv_folds", 5, "Folds of the cross-validation.")
  flags.DEFINE_integer("cv_seed", 1000, "Seed of the split used for CV (not a trial).")
  flags.DEFINE_enum("cv_baseline_mode", "spectral", ["spectral", "map", "vmap"], "How the exact "
                    "baselines' CV solves its systems (qsg_jax.baselines.cross_validate's mode): "
                    "spectral (one eigendecomposition per sigma, float64, exact ties for "
                    "duplicate points) or the LU paths map / vmap (float32).")
  flags.DEFINE_list("cv_step_size", None, "Step sizes the CV searches for QSG, for example 1,3 "
                    "(unset: --step_size alone; the papers do not search it).")
  flags.DEFINE_bool("exact_qsg", True, "Also solve QSG's own objective exactly in each trial, "
                    "with QSG's hyper-parameters (QS3ORAO-exact / QSG-S2AUC-exact).")
  for name in ("common_size", "cv_unlabeled"):
    flags.register_validator(name, lambda v: v >= 1, f"--{name} must be an integer >= 1.")
  common_flags.define_number_list_validator("cv_lam", minimum=0.0)
  common_flags.define_number_list_validator("cv_sigma", positive=True)
  common_flags.define_number_list_validator("cv_gamma", minimum=0.0, maximum=1.0)
  common_flags.define_number_list_validator("cv_c", positive=True)
  common_flags.define_number_list_validator("cv_step_size", positive=True, allow_auto=True)
  flags.register_validator("cv_folds", lambda v: v >= 2, "--cv_folds must be an integer >= 2.")


def main(argv):
  del argv
  run_comparison(FLAGS.datasets, output_dir=FLAGS.output_dir,
                 log=lambda line: print(line, flush=True), show_progress=FLAGS.progress,
                 resume=FLAGS.resume,
                 **{name: FLAGS[name].value for name in DEFAULT_SETTINGS})


if __name__ == "__main__":
  _define_flags()
  app.run(main)
