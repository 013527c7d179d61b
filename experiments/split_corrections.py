r"""sgemm: QS3ORAO, QS3ORAO with per-split corrections (f + g_j) and M-SAMULT on identical splits.

  QSG_JAX_DATA=../shared/data python -m experiments.split_corrections --common_size=10000
  python -m experiments.split_corrections --common_size=1000000        # all unlabeled points

Issue 20, part 3. QS3ORAO shares one ranking function across the k-1 ordinal splits and trails
M-SAMULT (k-1 independent exact functions) on sgemm by about 0.013 ordinal AUC. The extended model
(``qsg_jax.fit(..., split_lam=lam_g)``, ``qsg_jax.engine.corrections``) ranks split j with
f + g_j; its ordinal AUC averages the split AUCs with split j scored by column j of
``qsg_jax.split_scores`` (QS3ORAO: f for every split; M-SAMULT: its model j).

Trials are exactly those of ``experiments.auc_comparison`` with the same ``--seed`` and
``--trial_seeds`` (``protocols.comparison_trial_seeds``: split, common subset of ``--common_size``
unlabeled points, training key; AUC on that subset), so QS3ORAO and M-SAMULT reproduce that
script's numbers (the published runs used ``--trial_seeds=offset``). QS3ORAO and M-SAMULT use
the hyper-parameters those runs used (lam = 1e-3, sigma = 2^-3, gamma = 1, step "auto"). The
extended model's split_lam (and optionally lam, sigma) is chosen by stratified k-fold CV on the
labeled points of the separate CV split (seed ``--cv_seed``, not a trial) with
``--cv_unlabeled`` unlabeled points, scored by the mean per-split AUC of held-out folds; inf in
the grid is QS3ORAO itself.

Timing (``--timing_sizes``, on trial 0's split): warm training time of QS3ORAO and the extended
model at each n_u (0 = all) and their time per iteration, with the library's default pool
(``engine.use_unlabeled_cache``) and with the mini-batch pool forced (``cache_unlabeled=False``,
whose per-iteration cost does not depend on n_u); M-SAMULT at ``--timing_exact_size`` as the
trials fit it, and once semi-supervised (gamma = ``--timing_exact_gamma``), which solves over
all labeled + unlabeled points.

Writes split_corrections.{json,md,csv} into --output_dir and prints the issue's checks. The CV,
each trial and the timing are written at once to --output_dir/cells/ as they finish;
``--resume`` continues an interrupted run from them (same flags required).
"""

import math
import time

from absl import app
from absl import flags
import jax
import numpy as np

import qsg_jax
from qsg_jax import baselines
from qsg_jax import cv as cv_lib
from qsg_jax import data as data_lib
from qsg_jax import metrics
from experiments import common_flags
from experiments import protocols
from experiments import reporting
from experiments import run_store

FLAGS = flags.FLAGS
METHODS = ("QS3ORAO", "QS3ORAO+split", "M-SAMULT")

DEFAULT_SETTINGS = {
    "dataset": "sgemm",
    "data_dir": None,
    "trials": 10,
    "seed": 0,                  # seed of the run (see trial_seeds)
    "trial_seeds": "fold_in",   # as auc_comparison: "fold_in" or "offset" (int seed + t)
    "common_size": 10000,       # unlabeled points every method trains and is scored on
    "lam": 1e-3,                # QS3ORAO and M-SAMULT (the auc_comparison sgemm runs)
    "sigma": 0.125,
    "gamma": 1.0,
    "cv_split_lam": [1e-4, 1e-3, 1e-2, 1e-1, math.inf],   # the extended model's CV grid
    "cv_lam": [1e-3],
    "cv_sigma": [0.125],
    "cv_folds": 5,
    "cv_seed": 1000,
    "cv_unlabeled": 500,
    "num_steps": 1024,
    "num_frequencies": 32,
    "unlabeled_batch_size": 128,
    "step_size": "auto",
    "timing_sizes": [1000, 10000, 20000, 0],   # 0: every unlabeled point
    "timing_exact_size": 20000,  # M-SAMULT timing size (0: skip)
    "timing_exact_gamma": 0.5,   # semi-supervised M-SAMULT timed once (1 or more: skip)
    "timing_repeats": 2,        # warm calls per QSG timing; the fastest is reported
    "run_trials": True,         # False: CV and timing only
}


def split_auc(scores, labels, num_classes):
  """Mean over splits of the AUC of split j (y > j vs y <= j) by column j of [n, k-1] scores."""
  labels = np.asarray(labels)
  aucs = [float(metrics.masked_auc(np.asarray(scores[:, j]), labels > j, labels <= j))
          for j in range(num_classes - 1)]
  return float(np.mean(aucs))


def fit_qsg(train, k, key, args, **params):
  """``qsg_jax.fit`` with the run's engine settings; returns (FitResult, seconds)."""
  x_l, y_l, x_u = train
  if params.get("split_lam") is not None and math.isinf(params["split_lam"]):
    params = dict(params, split_lam=None)   # inf: f alone, i.e. QS3ORAO exactly as its trials
  start = time.perf_counter()
  result = qsg_jax.fit(x_l, y_l, x_u, key=key, num_classes=k, num_steps=args["num_steps"],
                       num_frequencies=args["num_frequencies"],
                       unlabeled_batch_size=args["unlabeled_batch_size"],
                       step_size=args["step_size"], **params)
  jax.block_until_ready(result.state.coef)
  return result, time.perf_counter() - start


def fit_method(method, train, k, key, args, params):
  """(score function x -> [n, k-1], training seconds) of one method."""
  if method == "M-SAMULT":
    start = time.perf_counter()
    model = baselines.fit_m_samult(*train, num_classes=k, lam=args["lam"], sigma=args["sigma"],
                                   gamma=args["gamma"])
    jax.block_until_ready(model.alpha)
    return (lambda x: baselines.decision_function(model, x)), time.perf_counter() - start
  result, seconds = fit_qsg(train, k, key, args, **params)
  return (lambda x: qsg_jax.split_scores(result, x)), seconds


def cross_validate_split(cv_data, k, args, log=print):
  """(best params, rows) of the extended model by stratified k-fold CV on the labeled points."""
  x_l, y_l, x_u = cv_data
  folds = cv_lib.stratified_folds(y_l, args["cv_folds"], seed=args["cv_seed"])
  rows = []
  for lam in args["cv_lam"]:
    for sigma in args["cv_sigma"]:
      for split_lam in args["cv_split_lam"]:
        params = dict(lam=lam, sigma=sigma, gamma=args["gamma"], split_lam=split_lam)
        scores = []
        for fold in range(args["cv_folds"]):
          held = folds == fold
          try:
            result, _ = fit_qsg((x_l[~held], y_l[~held], x_u), k, args["cv_seed"], args,
                                **params)
            scores.append(split_auc(qsg_jax.split_scores(result, x_l[held]), y_l[held], k))
          except qsg_jax.DivergenceError:
            scores.append(float("nan"))
        rows.append(dict(params, cv_auc=float(np.mean(scores)),
                         cv_auc_std=float(np.std(scores))))
        log(f"  CV {params}: {rows[-1]['cv_auc']:.4f} ({rows[-1]['cv_auc_std']:.4f})")
  best = max((r for r in rows if np.isfinite(r["cv_auc"])), key=lambda r: r["cv_auc"])
  return {name: best[name] for name in ("lam", "sigma", "gamma", "split_lam")}, rows


def trial_data(dataset, proto, seeds, common_size):
  """(labeled x, labeled y, unlabeled x, unlabeled y) of one trial as auc_comparison.

  ``seeds``: the trial's ``protocols.comparison_trial_seeds``.
  """
  trial = protocols.make_trial(dataset, proto, seeds.split, eval_size=None)
  n_u = trial.x_unlabeled.shape[0]
  common = seeds.subset_rng.permutation(n_u)[:min(common_size, n_u)]
  return trial.x_labeled, trial.y_labeled, trial.x_unlabeled[common], trial.y_eval[common]


def run_trials(dataset, proto, chosen, args, log=print, store=None):
  """Per-trial rows: ordinal AUC (per-split scores) and training time of every method.

  ``store``: a started ``run_store.CellStore``; each trial is written to it at once and taken
  from it on a resumed run.
  """
  rows = []
  for t in range(args["trials"]):
    mine = run_store.cached(store, f"trial-{t}",
                            lambda t=t: _run_trial(dataset, proto, chosen, args, t))
    rows += mine
    log(f"  trial {t + 1}/{args['trials']}: " + ", ".join(
        f"{r['method']} {r['auc']:.4f} ({r['train_time_s']:.2f} s)" for r in mine))
  return rows


def _run_trial(dataset, proto, chosen, args, t):
  k = proto.num_classes
  shared = dict(lam=args["lam"], sigma=args["sigma"], gamma=args["gamma"])
  params = {"QS3ORAO": shared, "QS3ORAO+split": chosen, "M-SAMULT": shared}
  seeds = protocols.comparison_trial_seeds(args["seed"], t, args["trial_seeds"])
  x_l, y_l, x_u, y_u = trial_data(dataset, proto, seeds, args["common_size"])
  rows = []
  for method in METHODS:
    score, seconds = fit_method(method, (x_l, y_l, x_u), k, seeds.fit_key, args, params[method])
    rows.append({"trial": t, "seed": seeds.seed, "method": method,
                 "num_unlabeled": x_u.shape[0], "auc": split_auc(score(x_u), y_u, k),
                 "train_time_s": seconds})
  return rows


def summarize(rows):
  """Mean (std) per method and paired differences against M-SAMULT (mean, std, std error)."""
  by = {m: np.array([r["auc"] for r in rows if r["method"] == m]) for m in METHODS}
  times = {m: np.array([r["train_time_s"] for r in rows if r["method"] == m]) for m in METHODS}
  summary = [{"method": m, "auc_mean": by[m].mean(), "auc_std": by[m].std(ddof=1) if
              by[m].size > 1 else 0.0, "trials": by[m].size,
              "train_time_s_median": float(np.median(times[m]))} for m in METHODS]
  paired = []
  for m in METHODS[:2]:
    diff = by[m] - by["M-SAMULT"]
    std = diff.std(ddof=1) if diff.size > 1 else 0.0
    paired.append({"method": f"{m} - M-SAMULT", "mean": diff.mean(), "std": std,
                   "std_error": std / math.sqrt(diff.size), "min": diff.min(), "max": diff.max(),
                   "trials_ahead": int(np.sum(diff >= 0))})
  diff = by["QS3ORAO+split"] - by["QS3ORAO"]
  std = diff.std(ddof=1) if diff.size > 1 else 0.0
  paired.append({"method": "QS3ORAO+split - QS3ORAO", "mean": diff.mean(), "std": std,
                 "std_error": std / math.sqrt(diff.size), "min": diff.min(), "max": diff.max(),
                 "trials_ahead": int(np.sum(diff >= 0))})
  return summary, paired


def _warm_time(fn, repeats):
  """(first call seconds, fastest of ``repeats`` further calls) of ``fn()``."""
  times = []
  for _ in range(1 + repeats):
    start = time.perf_counter()
    fn()
    times.append(time.perf_counter() - start)
  return times[0], min(times[1:])


def run_timing(dataset, proto, chosen, args, log=print):
  """Warm training times against n_u on trial 0's split, and M-SAMULT's at one size."""
  k = proto.num_classes
  seeds = protocols.comparison_trial_seeds(args["seed"], 0, args["trial_seeds"])
  trial = protocols.make_trial(dataset, proto, seeds.split, eval_size=1)
  order = seeds.subset_rng.permutation(trial.x_unlabeled.shape[0])
  shared = dict(lam=args["lam"], sigma=args["sigma"], gamma=args["gamma"])
  rows = []
  for size in args["timing_sizes"]:
    x_u = trial.x_unlabeled[order[:size or None]]
    train = (trial.x_labeled, trial.y_labeled, x_u)
    for method, params in (("QS3ORAO", shared), ("QS3ORAO+split", chosen)):
      for pool, cache in (("default", None), ("mini-batch", False)):
        first, warm = _warm_time(lambda: fit_qsg(train, k, seeds.fit_key, args,
                                                 cache_unlabeled=cache,
                                                 **params), args["timing_repeats"])
        rows.append({"method": method, "pool": pool, "num_unlabeled": x_u.shape[0],
                     "first_call_s": first, "train_time_s": warm,
                     "ms_per_iteration": 1e3 * warm / args["num_steps"]})
        log(f"  timing {method} [{pool}] n_u={x_u.shape[0]}: {warm:.2f} s warm "
            f"({first:.2f} s first), {rows[-1]['ms_per_iteration']:.3f} ms/iteration")
  size = args["timing_exact_size"]
  if size:
    train = (trial.x_labeled, trial.y_labeled, trial.x_unlabeled[order[:size]])
    gammas = [args["gamma"]] + ([args["timing_exact_gamma"]]
                                if args["timing_exact_gamma"] < 1 else [])
    for gamma in gammas:
      start = time.perf_counter()
      model = baselines.fit_m_samult(*train, num_classes=k, lam=args["lam"],
                                     sigma=args["sigma"], gamma=gamma)
      jax.block_until_ready(model.alpha)
      seconds = time.perf_counter() - start
      rows.append({"method": f"M-SAMULT (gamma={gamma:g})", "pool": f"{model.alpha.shape[1]} "
                   "centers", "num_unlabeled": size, "first_call_s": seconds,
                   "train_time_s": seconds, "ms_per_iteration": float("nan")})
      log(f"  timing M-SAMULT gamma={gamma:g} n_u={size}: {seconds:.2f} s "
          f"({model.alpha.shape[1]} centers)")
  return rows


def checks(summary, timing, args):
  """The issue's checks: mean AUC >= M-SAMULT's; >= 50x faster at 20,000; flat per iteration."""
  mean = {r["method"]: r["auc_mean"] for r in summary}
  out = []
  if summary:
    out.append({"check": "extended mean ordinal AUC >= M-SAMULT's",
                "value": f"{mean['QS3ORAO+split']:.4f} vs {mean['M-SAMULT']:.4f}",
                "verdict": "pass" if mean["QS3ORAO+split"] >= mean["M-SAMULT"] else "fail"})
  size = args["timing_exact_size"]
  ext = [r for r in timing if r["method"] == "QS3ORAO+split" and r["pool"] == "default"
         and r["num_unlabeled"] == size]
  for exact in (r for r in timing if r["method"].startswith("M-SAMULT")):
    if ext:
      ratio = exact["train_time_s"] / ext[0]["train_time_s"]
      out.append({"check": f"extended >= 50x faster than {exact['method']} at n_u = {size}",
                  "value": f"{ratio:.1f}x ({exact['train_time_s']:.2f} s vs "
                           f"{ext[0]['train_time_s']:.2f} s)",
                  "verdict": "pass" if ratio >= 50 else "fail"})
  for pool in ("default", "mini-batch"):
    per = [r["ms_per_iteration"] for r in timing
           if r["method"] == "QS3ORAO+split" and r["pool"] == pool]
    if len(per) > 1:
      spread = max(per) / min(per)
      out.append({"check": f"extended time per iteration flat in n_u ({pool} pool)",
                  "value": f"{min(per):.3f}-{max(per):.3f} ms (max/min {spread:.2f})",
                  "verdict": "pass" if spread <= 1.5 else "fail (max/min > 1.5)"})
  return out


def run(*, output_dir, log=print, resume=False, **settings):
  """CV, trials, timing; writes split_corrections.{json,md,csv}. Returns the payload.

  ``resume``: continue the interrupted run in ``output_dir`` (same settings; raises
  ``run_store.ResumeError`` otherwise, or when an unfinished run is there without it).
  """
  unknown = sorted(set(settings) - set(DEFAULT_SETTINGS))
  if unknown:
    raise ValueError(f"unknown settings {unknown}; expected some of {sorted(DEFAULT_SETTINGS)}.")
  args = dict(DEFAULT_SETTINGS, **settings)
  store = run_store.CellStore(output_dir)    # checks output_dir before any fit
  store.start(args, resume)
  log(f"settings: {args}; devices {jax.devices()}")
  dataset = data_lib.load(args["dataset"], data_dir=args["data_dir"])
  proto = protocols.protocol_for(dataset)
  k = proto.num_classes
  cv_trial = protocols.make_trial(dataset, proto, args["cv_seed"], eval_size=1)
  cv_u = cv_trial.x_unlabeled[np.random.default_rng(args["cv_seed"]).permutation(
      cv_trial.x_unlabeled.shape[0])[:args["cv_unlabeled"]]]
  start = time.perf_counter()
  chosen, cv_rows = run_store.cached(store, "cv", lambda: cross_validate_split(
      (cv_trial.x_labeled, cv_trial.y_labeled, cv_u), k, args, log))
  log(f"CV chose {chosen} ({time.perf_counter() - start:.0f} s)")
  rows = run_trials(dataset, proto, chosen, args, log, store) if args["run_trials"] else []
  summary, paired = summarize(rows) if rows else ([], [])
  timing = (run_store.cached(store, "timing", lambda: run_timing(dataset, proto, chosen, args,
                                                                  log))
            if args["timing_sizes"] else [])
  verdicts = checks(summary, timing, args)
  for table in (summary, paired, timing, verdicts):
    for r in table:
      log("  " + ", ".join(f"{k_}={v:.4f}" if isinstance(v, float) else f"{k_}={v}"
                           for k_, v in r.items()))
  payload = {"settings": args, "chosen": chosen, "cv": cv_rows, "summary": summary,
             "paired": paired, "timing": timing, "checks": verdicts, "rows": rows}
  sections = [(None, summary, None),
              ("Paired differences over trials", paired, None),
              ("Checks", verdicts, None),
              ("Training time", timing, None),
              ("Cross-validation of the extended model (CV split, not a trial)", cv_rows, None)]
  sections = [section for section in sections if section[1]]
  paths = reporting.write_report(output_dir, "split_corrections", payload, sections,
                                 title=f"{args['dataset']}: QS3ORAO, per-split corrections, "
                                       "M-SAMULT")
  store.finish_cells()
  log(f"wrote {paths['json']} and {paths['md']}")
  return payload


def _define_flags():
  common_flags.define_data_flags(dataset="sgemm")
  common_flags.define_run_flags(output_dir="results/split_corrections", trials=10,
                                seed_help="Seed of the run (see --trial_seeds).")
  common_flags.define_trial_seeds_flag()
  common_flags.define_resume_flag()
  flags.adopt_module_key_flags(common_flags)
  flags.DEFINE_integer("common_size", 10000, "Unlabeled points every method trains and is "
                       "scored on (1000000: all).")
  flags.DEFINE_float("lam", 1e-3, "lam of QS3ORAO and M-SAMULT.")
  flags.DEFINE_float("sigma", 0.125, "sigma of QS3ORAO and M-SAMULT.")
  flags.DEFINE_float("gamma", 1.0, "gamma of every method.")
  flags.DEFINE_list("cv_split_lam", ["0.0001", "0.001", "0.01", "0.1", "inf"],
                    "split_lam values the extended model's CV searches (inf: QS3ORAO).")
  flags.DEFINE_list("cv_lam", ["0.001"], "lam values the extended model's CV searches.")
  flags.DEFINE_list("cv_sigma", ["0.125"], "sigma values the extended model's CV searches.")
  common_flags.define_number_list_validator("cv_lam", minimum=0.0)
  common_flags.define_number_list_validator("cv_sigma", positive=True)
  flags.DEFINE_integer("cv_folds", 5, "Folds of the cross-validation.")
  flags.DEFINE_integer("cv_seed", 1000, "Seed of the split used for CV (not a trial).")
  flags.DEFINE_integer("cv_unlabeled", 500, "Unlabeled points used in CV.")
  flags.DEFINE_integer("num_steps", 1024, "Iterations T of both QSG models.")
  flags.DEFINE_integer("num_frequencies", 32, "Frequencies per block.")
  flags.DEFINE_integer("unlabeled_batch_size", 128, "Unlabeled points per step.")
  flags.DEFINE_string("step_size", "auto", "'auto' or a number (eta0).")
  flags.DEFINE_list("timing_sizes", ["1000", "10000", "20000", "0"], "n_u of the timing runs "
                    "(0: all; empty: no timing).")
  flags.DEFINE_integer("timing_exact_size", 20000, "n_u at which M-SAMULT is timed (0: skip).")
  flags.DEFINE_float("timing_exact_gamma", 0.5, "gamma of the semi-supervised M-SAMULT timed "
                     "once (>= 1: skip).")
  flags.DEFINE_integer("timing_repeats", 2, "Warm calls per QSG timing (the fastest is "
                       "reported).")
  flags.DEFINE_bool("run_trials", True, "Run the trials (--norun_trials: CV and timing only).")


def main(argv):
  del argv
  step = FLAGS.step_size if FLAGS.step_size == "auto" else float(FLAGS.step_size)
  run(output_dir=FLAGS.output_dir, log=lambda line: print(line, flush=True),
      dataset=FLAGS.dataset, data_dir=FLAGS.data_dir, trials=FLAGS.trials, seed=FLAGS.seed,
      trial_seeds=FLAGS.trial_seeds,
      common_size=FLAGS.common_size, lam=FLAGS.lam, sigma=FLAGS.sigma, gamma=FLAGS.gamma,
      cv_split_lam=[float(v) for v in FLAGS.cv_split_lam],
      cv_lam=[float(v) for v in FLAGS.cv_lam], cv_sigma=[float(v) for v in FLAGS.cv_sigma],
      cv_folds=FLAGS.cv_folds, cv_seed=FLAGS.cv_seed, cv_unlabeled=FLAGS.cv_unlabeled,
      num_steps=FLAGS.num_steps, num_frequencies=FLAGS.num_frequencies,
      unlabeled_batch_size=FLAGS.unlabeled_batch_size, step_size=step,
      timing_sizes=[int(v) for v in FLAGS.timing_sizes],
      timing_exact_size=FLAGS.timing_exact_size, timing_exact_gamma=FLAGS.timing_exact_gamma,
      timing_repeats=FLAGS.timing_repeats, run_trials=FLAGS.run_trials, resume=FLAGS.resume)


if __name__ == "__main__":
  _define_flags()
  app.run(main)
