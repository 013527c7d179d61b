r"""PNU-AUC's class prior: the labeled share (our default) against the paper's definition.

  QSG_JAX_DATA=../shared/data nice -n 19 python -m experiments.reproduction.pnu_prior \
      --output_dir=results/pnu_prior

The QSG-S2AUC paper (Sec. 6.1) sets PNU-AUC's class prior pi to "the class proportion in the
whole training set"; ``qsg_jax.baselines.fit_pnu_auc`` estimates it by default as the share of
positives among the 200 labeled points. This script measures what the choice changes, paired:
the trials of the papers'-protocol comparison (``experiments.auc_comparison --cv_grid=paper
--trial_seeds=offset --common_size=5000``, trial t split with the int seed t, the same 5,000
common unlabeled points, AUC on the same evaluation points) and PNU-AUC's hyper-parameters that
run's cross-validation chose (``CHOSEN``, from ``semisupervised_auc.md``), fitted twice per trial:
prior = labeled share, and prior = ``pnu_auc.training_set_prior`` over every labeled and unlabeled
training point (the unlabeled points' true labels: the paper's oracle). lam, sigma and eta stay at
the labeled-prior CV choice (a CV with the oracle prior might choose another eta).

Writes ``pnu_prior.{json,md,csv}`` (per-trial priors and AUCs, the summary table quoted in
``experiments/reproduction/RESULTS.md``, run D); each trial is stored at once, ``--resume``
continues an interrupted run.
"""

import dataclasses
import math
import time
from typing import Optional

import numpy as np

from experiments.common import cli
from experiments.common import protocols
from experiments.common import store as store_lib
from qsg_jax import baselines
from qsg_jax import data as data_lib
from qsg_jax import metrics
from qsg_jax.baselines import pnu_auc

# PNU-AUC's (lam, sigma, eta) chosen by the papers'-grid 5-fold CV of the full-grid runs of
# 2026-11-25 (semisupervised_auc.md, "Chosen hyper-parameters").
CHOSEN = {
    "breast_cancer": dict(lam=2.0 ** -3, sigma=2.0 ** -1, gamma=0.4),
    "ijcnn1": dict(lam=2.0 ** -3, sigma=2.0 ** 0, gamma=-1.0),
    "cod_rna": dict(lam=2.0 ** -3, sigma=2.0 ** 2, gamma=0.2),
    "bank_marketing": dict(lam=2.0 ** 2, sigma=2.0 ** -3, gamma=0.8),
    "accelerometer": dict(lam=2.0 ** -2, sigma=2.0 ** 0, gamma=-0.9),
    "skin": dict(lam=2.0 ** -3, sigma=2.0 ** 3, gamma=-0.3),
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The paired prior comparison's settings (one flag each)."""
  output_dir: str = "results/pnu_prior"
  datasets: tuple[str, ...] = cli.setting(tuple(CHOSEN), "Binary datasets (keys of CHOSEN).",
                                          choices=tuple(CHOSEN), nonempty=True)
  trials: int = cli.setting(10, "Trials (int seeds 0..trials-1, as the published runs).",
                            lower=2)
  common_size: int = cli.setting(5000, "Unlabeled points PNU-AUC trains on.", lower=1)
  eval_size: int = cli.setting(20000, "Score on at most this many evaluation points.", lower=0)
  data_dir: Optional[str] = None


def _training_labels(dataset, proto, split_seed):
  """(labels of the labeled points, labels of every unlabeled training point) of a trial."""
  y = protocols.ordinal_labels(dataset, proto.num_classes)
  num_test = 0
  if proto.eval_on == "test" and dataset.x_test is None:
    num_test = int(round(proto.test_fraction * dataset.x.shape[0]))
  split = data_lib.split_semisupervised(split_seed, y, proto.num_labeled, num_test=num_test)
  return y[split.labeled], y[split.unlabeled]


def run_trial(dataset, proto, params, t, common_size, eval_size):
  """Priors and test AUC of PNU-AUC with each prior on trial ``t`` (same split and data)."""
  seeds = protocols.comparison_trial_seeds(0, t, "offset")
  trial = protocols.make_trial(dataset, proto, seeds.split, eval_size=eval_size or None)
  y_l, y_u = _training_labels(dataset, proto, seeds.split)
  if not np.array_equal(y_l, trial.y_labeled):
    raise RuntimeError("the split replayed here differs from make_trial's")
  common = seeds.subset_rng.permutation(trial.x_unlabeled.shape[0])[:common_size]
  x_u = trial.x_unlabeled[common]
  priors = {"labeled": float(pnu_auc.estimate_prior(y_l)[0]),
            "training": float(pnu_auc.training_set_prior(y_l, y_u)[0])}
  row = {"trial": t, "prior_labeled": priors["labeled"], "prior_training": priors["training"]}
  for which, prior in priors.items():
    start = time.perf_counter()
    model = baselines.fit_pnu_auc(trial.x_labeled, trial.y_labeled, x_u, prior=prior, **params)
    scores = baselines.decision_function(model, trial.x_eval)
    row[f"auc_{which}"] = float(metrics.binary_auc(scores, trial.y_eval))
    row[f"seconds_{which}"] = time.perf_counter() - start
  return row


def summarize(name, rows):
  """Mean (std) AUC per prior and the paired difference training - labeled with its SE."""
  a = np.array([r["auc_labeled"] for r in rows])
  b = np.array([r["auc_training"] for r in rows])
  d = b - a
  p = CHOSEN[name]
  return {"dataset": name, "lam, sigma, eta": f"{p['lam']:g}, {p['sigma']:g}, {p['gamma']:g}",
          "labeled-share prior (range)": f"{min(r['prior_labeled'] for r in rows):.3f}-"
                                         f"{max(r['prior_labeled'] for r in rows):.3f}",
          "whole-training-set prior": round(float(np.mean([r["prior_training"] for r in rows])), 4),
          "AUC, labeled prior": f"{a.mean():.4f} ({a.std(ddof=1):.4f})",
          "AUC, training-set prior": f"{b.mean():.4f} ({b.std(ddof=1):.4f})",
          "difference [SE]": f"{d.mean():+.4f} [{d.std(ddof=1) / math.sqrt(d.size):.4f}]",
          "training prior better": f"{int(np.sum(d > 0))}/{d.size}",
          "diff_mean": float(d.mean()), "diff_se": float(d.std(ddof=1) / math.sqrt(d.size))}


def run(settings: Settings, log=cli.log_line):
  """Runs every dataset; writes pnu_prior.{json,md,csv}; returns the summaries."""
  store = store_lib.RunStore(settings.output_dir, "pnu_prior")
  store.start(settings.as_dict(exclude=cli.RUN_OPTIONS), resume=settings.resume,
              overwrite=settings.overwrite)
  out, summaries = {}, []
  for name in settings.datasets:
    dataset = data_lib.load(name, data_dir=settings.data_dir)
    proto = protocols.protocol_for(dataset)
    rows = []
    for t in range(settings.trials):
      row = store.cached(f"{name}-trial-{t}", lambda t=t: run_trial(
          dataset, proto, CHOSEN[name], t, settings.common_size, settings.eval_size))
      rows.append(row)
      log(f"{name} trial {t}: prior labeled {row['prior_labeled']:.4f} training "
          f"{row['prior_training']:.4f}; AUC {row['auc_labeled']:.4f} -> "
          f"{row['auc_training']:.4f}")
    summaries.append(summarize(name, rows))
    out[name] = rows
  columns = [c for c in summaries[0] if c not in ("diff_mean", "diff_se")]
  store.finish({"trials": out, "summary": summaries}, [(None, summaries, columns)],
               title="PNU-AUC: labeled-share prior vs the whole training set's class proportion")
  return summaries


def main(argv):
  run(cli.settings_from_flags(Settings, argv))


if __name__ == "__main__":
  cli.define_flags(Settings)
  cli.run_main(main)
