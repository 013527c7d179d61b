"""The papers' experimental protocols, and the named random streams of a trial.

Ordinal paper (QS3ORAO): regression targets discretized into k = 5 equal-frequency bins, 500
labeled points, all the rest unlabeled, AUC reported on the unlabeled data.
Binary paper (QSG-S2AUC): 200 labeled points, the rest unlabeled, AUC reported on test data (the
official test file when the source has one, else a held-out random part).
Features are min-max scaled with statistics of the training points (labeled + unlabeled).

Randomness. Trial t of a run seeded s has the key ``trial_key(s, t) = fold_in(key(s), t)``; each
use of randomness in a trial draws from its own named stream of that key (``STREAMS``), so a
trial's numbers depend only on (s, t, settings), and no two uses share bits. Scripts that take an
int seed instead of a key (the schemes of earlier published runs) draw ``seed_rng(seed, name)``
from ``SEED_STREAMS``. The numbers behind the names are fixed by the published runs.
"""

import dataclasses
from typing import Optional

import jax
import numpy as np

from qsg_jax import data as data_lib

# fold_in(trial key, number) of each use of a trial's randomness.
STREAMS = {"split": 0, "eval_subset": 1, "training": 2, "unlabeled_order": 3}
# np.random.default_rng([seed, number]) of each use of an int seed's randomness.
SEED_STREAMS = {"eval_subset": 1, "unlabeled_subset": 2, "timing_order": 3}
# The CV split of a run is trial CV_TRIAL of its seed: never one of the reported trials.
CV_TRIAL = 2**31 - 1
TRIAL_SEEDS = ("fold_in", "offset")


@dataclasses.dataclass(frozen=True)
class Protocol:
  """How a dataset is split and scored."""
  task: str                  # "ordinal" or "binary"
  num_labeled: int           # labeled points per trial
  num_classes: int           # k (2 for binary)
  eval_on: str               # "unlabeled" (ordinal paper) or "test" (binary paper)
  test_fraction: float = 0.2  # held-out share when the source has no test file (binary)
  # eval_on="unlabeled": every class keeps an unlabeled point (redraw), so that every split's
  # AUC is defined. Off in the reproductions: their recorded draws (esl) stay as they were.
  cover_evaluation: bool = False


def check_num_labeled(names, num_labeled, data_dir=None):
  """Raises ``ValueError`` naming the dataset where ``num_labeled`` leaves no unlabeled point
  (``protocol_for``'s check), for scripts to call before their run store starts; a dataset whose
  files are missing is left to the run, which skips it with its reason."""
  for name in names:
    try:
      dataset = data_lib.load(name, data_dir=data_dir)
    except data_lib.DataNotFoundError:
      continue
    try:
      protocol_for(dataset, num_labeled)
    except ValueError as e:
      raise ValueError(f"--num_labeled on {name}: {e}") from None


def protocol_for(dataset, num_labeled=None, num_classes=None):
  """The paper protocol matching ``dataset.task``, with optional overrides."""
  if dataset.task == "binary":
    proto = Protocol("binary", 200, 2, "test")
  else:
    k = int(dataset.y.max()) + 1 if dataset.task == "ordinal" else 5
    proto = Protocol("ordinal", 500, k, "unlabeled")
  n = dataset.x.shape[0]
  labeled = num_labeled if num_labeled is not None else min(proto.num_labeled, n // 2)
  classes = num_classes if num_classes is not None else proto.num_classes
  if dataset.task == "binary" and classes != 2:
    raise ValueError(f"{dataset.name} is a binary dataset; num_classes must be 2, got {classes}.")
  if dataset.task == "ordinal" and classes != proto.num_classes:
    raise ValueError(f"{dataset.name} has {proto.num_classes} ordered classes of its own; "
                     f"num_classes={classes} only cuts regression targets: leave it unset.")
  if labeled >= n:
    raise ValueError(f"num_labeled={labeled} leaves no other point: {dataset.name} has {n} points "
                     f"(the protocol's default: {min(proto.num_labeled, n // 2)}).")
  return dataclasses.replace(proto, num_labeled=labeled, num_classes=classes)


@dataclasses.dataclass(frozen=True)
class Trial:
  """Arrays of one trial, already scaled."""
  x_labeled: np.ndarray     # [n_l, d]
  y_labeled: np.ndarray     # [n_l] int 0..k-1
  x_unlabeled: np.ndarray   # [n_u, d]
  x_eval: np.ndarray        # [n_e, d] points the AUC is reported on
  y_eval: np.ndarray        # [n_e]
  eval_description: str     # what x_eval is, for the report


def ordinal_labels(dataset, num_classes):
  """Integer labels 0..k-1: discretized targets for regression data, as-is otherwise."""
  if dataset.task == "regression":
    labels, _ = data_lib.discretize_equal_frequency(dataset.y, num_classes)
    return labels
  return np.asarray(dataset.y, np.int64)


def trial_key(seed: int, trial: int) -> jax.Array:
  """The key of trial ``trial`` of a run seeded ``seed``: ``fold_in(key(seed), trial)``.

  Unlike ``seed + trial``, runs of different seeds share no trial.
  """
  return jax.random.fold_in(jax.random.key(seed), trial)


def stream_key(key: jax.Array, name: str) -> jax.Array:
  """The key of stream ``name`` (one of ``STREAMS``) of a trial whose key is ``key``."""
  return jax.random.fold_in(key, STREAMS[name])


def stream_rng(key: jax.Array, name: str) -> np.random.Generator:
  """A NumPy generator of stream ``name`` of a trial whose key is ``key``."""
  return np.random.default_rng(np.asarray(jax.random.key_data(stream_key(key, name))))


def seed_rng(seed: int, name: str) -> np.random.Generator:
  """A NumPy generator of stream ``name`` (one of ``SEED_STREAMS``) of an int seed."""
  return np.random.default_rng([seed, SEED_STREAMS[name]])


@dataclasses.dataclass(frozen=True)
class TrialSeeds:
  """The randomness of trial ``t`` of a comparison run (``comparison_trial_seeds``)."""
  split: object                    # make_trial's seed: a trial key, or an int ("offset")
  subset_rng: np.random.Generator  # orders the unlabeled points (the common subset)
  fit_key: object                  # training key of the stochastic methods
  seed: int                        # the int recorded in the rows ("offset": seed + t)


def comparison_trial_seeds(seed: int, t: int, mode: str = "fold_in") -> TrialSeeds:
  """Split, unlabeled-subset order and training key of trial ``t`` of a run seeded ``seed``.

  ``mode="fold_in"`` (the default): everything from ``trial_key(seed, t)``, so runs of different
  seeds share no trial. ``mode="offset"``: trial t uses the int seed ``seed + t`` for everything,
  the scheme of the runs published in ``experiments/reproduction/`` before 2026-11-25; runs whose
  seeds differ by less than the number of trials then share trials.
  """
  if mode == "offset":
    s = seed + t
    return TrialSeeds(s, seed_rng(s, "unlabeled_subset"), s, s)
  if mode != "fold_in":
    raise ValueError(f"trial_seeds must be one of {TRIAL_SEEDS}; received {mode!r}.")
  key = trial_key(seed, t)
  return TrialSeeds(key, stream_rng(key, "unlabeled_order"), stream_key(key, "training"), seed)


def make_trial(dataset, proto: Protocol, seed, eval_size: Optional[int] = None):
  """Splits, scales and subsamples the evaluation set of one trial.

  Args:
    dataset: ``qsg_jax.data.Dataset``.
    proto: ``Protocol``.
    seed: trial key (``trial_key``), or an int trial seed (the split and the evaluation subsample
      depend only on it).
    eval_size: score on a uniform random subset of this many evaluation points (None or 0: all).

  Returns:
    ``Trial``.
  """
  if isinstance(seed, (int, np.integer)):
    split_seed, eval_rng = seed, lambda: seed_rng(seed, "eval_subset")
  else:
    split_seed = stream_key(seed, "split")
    eval_rng = lambda: stream_rng(seed, "eval_subset")
  y = ordinal_labels(dataset, proto.num_classes)
  x, x_test, y_test = dataset.x, dataset.x_test, dataset.y_test
  if proto.eval_on == "test" and x_test is None:
    num_test = int(round(proto.test_fraction * x.shape[0]))
  else:
    num_test = 0
  split = data_lib.split_semisupervised(split_seed, y, proto.num_labeled, num_test=num_test,
                                        cover_unlabeled=proto.cover_evaluation
                                        and proto.eval_on == "unlabeled")
  train_idx = np.concatenate([split.labeled, split.unlabeled])
  lo, scale = data_lib.minmax_fit(x[train_idx])
  scaled = lambda a: data_lib.minmax_apply(a, lo, scale).astype(np.float32)
  if proto.eval_on == "unlabeled":
    x_eval, y_eval, what = x[split.unlabeled], y[split.unlabeled], "the unlabeled training points"
  elif x_test is not None:
    x_eval, y_eval, what = x_test, np.asarray(y_test, np.int64), "the official test file"
  else:
    x_eval, y_eval = x[split.test], y[split.test]
    what = f"a held-out {proto.test_fraction:.0%} test split"
  if eval_size and eval_size < x_eval.shape[0]:
    pick = eval_rng().choice(x_eval.shape[0], eval_size, replace=False)
    x_eval, y_eval = x_eval[pick], y_eval[pick]
    what = f"a random subset of {eval_size} of {what}"
  return Trial(scaled(x[split.labeled]), y[split.labeled], scaled(x[split.unlabeled]),
               scaled(x_eval), y_eval, what)


def cv_data(dataset, proto, cv_seed, num_unlabeled):
  """(labeled x, labeled y, unlabeled x) of the separate CV split of int seed ``cv_seed``: its
  labeled points and ``num_unlabeled`` of its unlabeled ones (default_rng(cv_seed) order)."""
  trial = make_trial(dataset, proto, cv_seed, eval_size=1)
  order = np.random.default_rng(cv_seed).permutation(trial.x_unlabeled.shape[0])
  return trial.x_labeled, trial.y_labeled, trial.x_unlabeled[order[:num_unlabeled]]
