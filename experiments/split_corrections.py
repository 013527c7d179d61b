r"""sgemm: QS3ORAO, QS3ORAO with per-split corrections (f + g_j) and M-SAMULT on identical splits.

  QSG_JAX_DATA=../shared/data python -m experiments.split_corrections --common_size=10000
  python -m experiments.split_corrections --common_size=1000000        # all unlabeled points

QS3ORAO shares one ranking function across the k-1 ordinal splits and trails
M-SAMULT (k-1 independent exact functions) on sgemm by about 0.013 ordinal AUC. The extended model
(``qsg_jax.fit(..., split_lam=lam_g)``, ``qsg_jax.engine.corrections``) ranks split j with
f + g_j; its ordinal AUC averages the split AUCs with split j scored by column j of
``qsg_jax.split_scores`` (QS3ORAO: f for every split; M-SAMULT: its model j).

Trials are exactly those of ``experiments.auc_comparison`` with the same ``--seed`` and
``--trial_seeds`` (``protocols.comparison_trial_seeds``: split, common subset of ``--common_size``
unlabeled points, training key; AUC on that subset), so QS3ORAO and M-SAMULT reproduce that
script's numbers (the published runs used ``--trial_seeds=offset``). QS3ORAO and M-SAMULT use
the hyper-parameters those runs used (lam = 1e-3, sigma = 2^-3, gamma = 1, step "auto"). The
extended model's split_lam (and optionally lam, sigma) is chosen by the library's k-fold CV
(``qsg_jax.model_selection.cross_validate`` with a split_lam grid key) on the labeled points of
the separate CV split (seed ``--cv_seed``, not a trial) with ``--cv_unlabeled`` unlabeled
points, scored by the mean per-split AUC of held-out folds; inf in the grid is QS3ORAO itself.

Timing (``--timing_sizes``, on trial 0's split): warm training time of QS3ORAO and the extended
model at each n_u (0 = all) and their time per iteration, with the library's default pool
(``engine.use_unlabeled_cache``) and with the mini-batch pool forced (``cache_unlabeled=False``,
whose per-iteration cost does not depend on n_u); M-SAMULT at ``--timing_exact_size`` as the
trials fit it, and once semi-supervised (gamma = ``--timing_exact_gamma``), which solves over
all labeled + unlabeled points.

Writes split_corrections.{json,md,csv} into --output_dir and prints whether the extension's
goals hold (AUC at least M-SAMULT's, >= 50x faster, time per iteration flat in n_u). The CV,
each trial and the timing are written at once to --output_dir/cells/split_corrections/ as they
finish; ``--resume`` continues an interrupted run from them (same flags required).
"""

import dataclasses
import math
import time
from typing import Optional

import jax
import numpy as np

import qsg_jax
from qsg_jax import baselines
from qsg_jax import data as data_lib
from qsg_jax import model_selection
from experiments.common import cli
from experiments.common import protocols
from experiments.common import store as store_lib

METHODS = ("QS3ORAO", "QS3ORAO+split", "M-SAMULT")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The study's settings (one flag each)."""
  dataset: str = "sgemm"
  data_dir: Optional[str] = None
  output_dir: str = "results/split_corrections"
  trials: int = 10
  seed: int = cli.setting(0, "Seed of the run (see --trial_seeds).")
  trial_seeds: str = "fold_in"
  common_size: int = cli.setting(10000, "Unlabeled points every method trains and is scored on "
                                 "(1000000: all).", lower=1)
  lam: float = cli.setting(1e-3, "lam of QS3ORAO and M-SAMULT.", lower=0.0)
  sigma: float = cli.setting(0.125, "sigma of QS3ORAO and M-SAMULT.", positive=True)
  gamma: float = cli.setting(1.0, "gamma of every method.", lower=0.0, upper=1.0)
  cv_split_lam: tuple[float, ...] = cli.setting(
      (1e-4, 1e-3, 1e-2, 1e-1, math.inf), "split_lam values the extended model's CV searches "
      "(inf: QS3ORAO).", positive=True)
  cv_lam: tuple[float, ...] = cli.setting((1e-3,), "lam values the extended model's CV "
                                          "searches.", lower=0.0)
  cv_sigma: tuple[float, ...] = cli.setting((0.125,), "sigma values the extended model's CV "
                                            "searches.", positive=True)
  cv_folds: int = cli.setting(5, "Folds of the cross-validation.", lower=2)
  cv_seed: int = cli.setting(1000, "Seed of the split used for CV (not a trial).")
  cv_unlabeled: int = cli.setting(500, "Unlabeled points used in CV.", lower=1)
  num_steps: int = cli.setting(1024, "Iterations T of both QSG models.", lower=1)
  num_frequencies: int = cli.setting(32, "Frequencies per block.", lower=1)
  unlabeled_batch_size: int = cli.setting(128, "Unlabeled points per step.", lower=1)
  step_size: cli.StepSize = "auto"
  timing_sizes: tuple[int, ...] = cli.setting((1000, 10000, 20000, 0), "n_u of the timing runs "
                                              "(0: all; empty: no timing).", lower=0)
  timing_exact_size: int = cli.setting(20000, "n_u at which M-SAMULT is timed (0: skip).",
                                       lower=0)
  timing_exact_gamma: float = cli.setting(0.5, "gamma of the semi-supervised M-SAMULT timed "
                                          "once (>= 1: skip).", lower=0.0)
  timing_repeats: int = cli.setting(2, "Warm calls per QSG timing (the fastest is reported).",
                                    lower=1)
  run_trials: bool = cli.setting(True, "Run the trials (--norun_trials: CV and timing only).")

  def __post_init__(self):
    super().__post_init__()   # the name is known after this
    task = data_lib.registry.get_entry(self.dataset).task
    if task == "binary":   # one split: nothing to correct per split (was an IndexError, late)
      raise cli.UserError(f"--dataset={self.dataset} is a binary dataset; split corrections "
                          "need k >= 3 ordered classes (an ordinal or regression dataset, e.g. "
                          "sgemm).")


def _split_lam(value):
  """None (plain QS3ORAO, exactly as its trials) for inf, else the value."""
  return None if value is None or math.isinf(value) else value


def fit_qsg(train, k, key, settings, **params):
  """``qsg_jax.fit`` with the run's engine settings; returns (FitResult, seconds)."""
  x_l, y_l, x_u = train
  params = dict(params, split_lam=_split_lam(params.get("split_lam")))
  start = time.perf_counter()
  result = qsg_jax.fit(x_l, y_l, x_u, key=key, num_classes=k, num_steps=settings.num_steps,
                       num_frequencies=settings.num_frequencies,
                       unlabeled_batch_size=settings.unlabeled_batch_size,
                       step_size=settings.step_size, **params)
  jax.block_until_ready(result.state.coef)
  return result, time.perf_counter() - start


def fit_method(method, train, k, key, settings, params):
  """(score function x -> [n, k-1], training seconds) of one method."""
  if method == "M-SAMULT":
    start = time.perf_counter()
    model = baselines.fit_m_samult(*train, num_classes=k, **params)
    jax.block_until_ready(model.alpha)
    return (lambda x: baselines.decision_function(model, x)), time.perf_counter() - start
  result, seconds = fit_qsg(train, k, key, settings, **params)
  return (lambda x: qsg_jax.split_scores(result, x)), seconds


def cross_validate_split(cv_data, k, settings, log=cli.log_line):
  """(best params, rows) of the extended model by the library's stratified k-fold CV."""
  x_l, y_l, x_u = cv_data
  grid = {"lam": settings.cv_lam, "sigma": settings.cv_sigma, "gamma": [settings.gamma],
          "split_lam": [_split_lam(v) for v in settings.cv_split_lam],
          "step_size": [settings.step_size]}
  result = model_selection.cross_validate(
      x_l, y_l, x_u, grid=grid, num_folds=settings.cv_folds, seed=settings.cv_seed,
      key=settings.cv_seed, num_classes=k, num_steps=settings.num_steps,
      num_frequencies=settings.num_frequencies,
      unlabeled_batch_size=settings.unlabeled_batch_size)
  fold_means = np.nanmean(result.fold_scores, axis=-1)       # [*grid shape, F]
  rows = []
  for index in np.ndindex(fold_means.shape[:-1]):
    point = {name: values[i] for (name, values), i in zip(result.grid.items(), index)}
    folds = fold_means[index]
    rows.append(dict(lam=float(point["lam"]), sigma=float(point["sigma"]),
                     gamma=settings.gamma,
                     split_lam=math.inf if point["split_lam"] is None else point["split_lam"],
                     cv_auc=float(np.mean(folds)), cv_auc_std=float(np.std(folds))))
    log(f"  CV {rows[-1]}")
  best = dict(result.best, split_lam=result.best["split_lam"] if result.best["split_lam"]
              is not None else math.inf)
  return {name: best[name] for name in ("lam", "sigma", "gamma", "split_lam")}, rows


def trial_data(dataset, proto, seeds, common_size):
  """(labeled x, labeled y, unlabeled x, unlabeled y) of one trial as auc_comparison.

  ``seeds``: the trial's ``protocols.comparison_trial_seeds``.
  """
  trial = protocols.make_trial(dataset, proto, seeds.split, eval_size=None)
  n_u = trial.x_unlabeled.shape[0]
  common = seeds.subset_rng.permutation(n_u)[:min(common_size, n_u)]
  return trial.x_labeled, trial.y_labeled, trial.x_unlabeled[common], trial.y_eval[common]


def run_trials(dataset, proto, chosen, settings, log=cli.log_line, store=None):
  """Per-trial rows: ordinal AUC (per-split scores) and training time of every method.

  ``store``: a started ``store_lib.RunStore``; each trial is written to it at once and taken
  from it on a resumed run.
  """
  rows = []
  for t in range(settings.trials):
    mine = store_lib.cached(store, f"trial-{t}",
                            lambda t=t: _run_trial(dataset, proto, chosen, settings, t))
    rows += mine
    log(f"  trial {t + 1}/{settings.trials}: " + ", ".join(
        f"{r['method']} {r['auc']:.4f} ({r['train_time_s']:.2f} s)" for r in mine))
  return rows


def _run_trial(dataset, proto, chosen, settings, t):
  k = proto.num_classes
  shared = dict(lam=settings.lam, sigma=settings.sigma, gamma=settings.gamma)
  params = {"QS3ORAO": shared, "QS3ORAO+split": chosen, "M-SAMULT": shared}
  seeds = protocols.comparison_trial_seeds(settings.seed, t, settings.trial_seeds)
  x_l, y_l, x_u, y_u = trial_data(dataset, proto, seeds, settings.common_size)
  rows = []
  for method in METHODS:
    score, seconds = fit_method(method, (x_l, y_l, x_u), k, seeds.fit_key, settings,
                                params[method])
    rows.append({"trial": t, "seed": seeds.seed, "method": method,
                 "num_unlabeled": x_u.shape[0],
                 "auc": baselines.mean_split_auc(score(x_u), y_u, k), "train_time_s": seconds})
  return rows


def summarize(rows):
  """Mean (std) per method and paired differences against M-SAMULT (mean, std, std error)."""
  by = {m: np.array([r["auc"] for r in rows if r["method"] == m]) for m in METHODS}
  times = {m: np.array([r["train_time_s"] for r in rows if r["method"] == m]) for m in METHODS}
  summary = [{"method": m, "auc_mean": by[m].mean(), "auc_std": by[m].std(ddof=1) if
              by[m].size > 1 else 0.0, "trials": by[m].size,
              "train_time_s_median": float(np.median(times[m]))} for m in METHODS]
  paired = [_paired(f"{m} - M-SAMULT", by[m] - by["M-SAMULT"]) for m in METHODS[:2]]
  paired.append(_paired("QS3ORAO+split - QS3ORAO", by["QS3ORAO+split"] - by["QS3ORAO"]))
  return summary, paired


def _paired(name, diff):
  """Mean, std, std error, range and count >= 0 of paired differences ``diff``."""
  std = diff.std(ddof=1) if diff.size > 1 else 0.0
  return {"method": name, "mean": diff.mean(), "std": std, "std_error": std / math.sqrt(diff.size),
          "min": diff.min(), "max": diff.max(), "trials_ahead": int(np.sum(diff >= 0))}


def _warm_time(fn, repeats):
  """(first call seconds, fastest of ``repeats`` further calls) of ``fn()``."""
  times = []
  for _ in range(1 + repeats):
    start = time.perf_counter()
    fn()
    times.append(time.perf_counter() - start)
  return times[0], min(times[1:])


def run_timing(dataset, proto, chosen, settings, log=cli.log_line):
  """Warm training times against n_u on trial 0's split, and M-SAMULT's at one size."""
  k = proto.num_classes
  seeds = protocols.comparison_trial_seeds(settings.seed, 0, settings.trial_seeds)
  trial = protocols.make_trial(dataset, proto, seeds.split, eval_size=1)
  order = seeds.subset_rng.permutation(trial.x_unlabeled.shape[0])
  shared = dict(lam=settings.lam, sigma=settings.sigma, gamma=settings.gamma)
  rows = []
  for size in settings.timing_sizes:
    x_u = trial.x_unlabeled[order[:size or None]]
    train = (trial.x_labeled, trial.y_labeled, x_u)
    for method, params in (("QS3ORAO", shared), ("QS3ORAO+split", chosen)):
      for pool, cache in (("default", None), ("mini-batch", False)):
        first, warm = _warm_time(lambda: fit_qsg(train, k, seeds.fit_key, settings,
                                                 cache_unlabeled=cache,
                                                 **params), settings.timing_repeats)
        rows.append({"method": method, "pool": pool, "num_unlabeled": x_u.shape[0],
                     "first_call_s": first, "train_time_s": warm,
                     "ms_per_iteration": 1e3 * warm / settings.num_steps})
        log(f"  timing {method} [{pool}] n_u={x_u.shape[0]}: {warm:.2f} s warm "
            f"({first:.2f} s first), {rows[-1]['ms_per_iteration']:.3f} ms/iteration")
  size = settings.timing_exact_size
  if size:
    train = (trial.x_labeled, trial.y_labeled, trial.x_unlabeled[order[:size]])
    gammas = [settings.gamma] + ([settings.timing_exact_gamma]
                                if settings.timing_exact_gamma < 1 else [])
    for gamma in gammas:
      start = time.perf_counter()
      model = baselines.fit_m_samult(*train, num_classes=k, lam=settings.lam,
                                     sigma=settings.sigma, gamma=gamma)
      jax.block_until_ready(model.alpha)
      seconds = time.perf_counter() - start
      rows.append({"method": f"M-SAMULT (gamma={gamma:g})", "pool": f"{model.alpha.shape[1]} "
                   "centers", "num_unlabeled": size, "first_call_s": seconds,
                   "train_time_s": seconds, "ms_per_iteration": float("nan")})
      log(f"  timing M-SAMULT gamma={gamma:g} n_u={size}: {seconds:.2f} s "
          f"({model.alpha.shape[1]} centers)")
  return rows


def checks(summary, timing, settings):
  """The extension's goals: mean AUC >= M-SAMULT's; >= 50x faster at 20,000; flat per iteration."""
  mean = {r["method"]: r["auc_mean"] for r in summary}
  out = []
  if summary:
    out.append({"check": "extended mean ordinal AUC >= M-SAMULT's",
                "value": f"{mean['QS3ORAO+split']:.4f} vs {mean['M-SAMULT']:.4f}",
                "verdict": "pass" if mean["QS3ORAO+split"] >= mean["M-SAMULT"] else "fail"})
  size = settings.timing_exact_size
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


def run(settings: Settings, log=cli.log_line):
  """CV, trials, timing; writes split_corrections.{json,md,csv}. Returns the payload.

  Raises:
    store_lib.StoreError, PermissionError: the output directory cannot be used as asked.
  """
  store = store_lib.RunStore(settings.output_dir, "split_corrections")   # before any fit
  store.start(settings.as_dict(exclude=cli.RUN_OPTIONS), resume=settings.resume,
              overwrite=settings.overwrite)
  dataset = data_lib.load(settings.dataset, data_dir=settings.data_dir)
  proto = protocols.protocol_for(dataset)
  k = proto.num_classes
  cv_data = protocols.cv_data(dataset, proto, settings.cv_seed, settings.cv_unlabeled)
  start = time.perf_counter()
  chosen, cv_rows = store.cached("cv", lambda: cross_validate_split(cv_data, k, settings, log))
  log(f"CV chose {chosen} ({time.perf_counter() - start:.0f} s)")
  rows = run_trials(dataset, proto, chosen, settings, log, store) if settings.run_trials else []
  summary, paired = summarize(rows) if rows else ([], [])
  timing = (store.cached("timing", lambda: run_timing(dataset, proto, chosen, settings, log))
            if settings.timing_sizes else [])
  verdicts = checks(summary, timing, settings)
  for table in (summary, paired, timing, verdicts):
    for r in table:
      log("  " + ", ".join(f"{k_}={v:.4f}" if isinstance(v, float) else f"{k_}={v}"
                           for k_, v in r.items()))
  payload = {"chosen": chosen, "cv": cv_rows, "summary": summary, "paired": paired,
             "timing": timing, "checks": verdicts, "rows": rows}
  sections = [(None, summary, None),
              ("Paired differences over trials", paired, None),
              ("The extension's goals", verdicts, None),
              ("Training time", timing, None),
              ("Cross-validation of the extended model (CV split, not a trial)", cv_rows, None)]
  paths = store.finish(payload, [section for section in sections if section[1]],
                       title=f"{settings.dataset}: QS3ORAO, per-split corrections, M-SAMULT")
  log(f"wrote {paths['json']} and {paths['md']}")
  return payload


if __name__ == "__main__":
  cli.script(Settings, run)
