"""The estimators' "auto", "ard" and "isotropic" values: lam, the kernel and labeled_weight
chosen from the data.

``resolve`` turns the estimator's length_scale / lam / labeled_weight (each "auto" or a value;
length_scale also "ard" or "isotropic") into the values a fit uses, on the inputs already
scaled as the fit sees them:

* lam / labeled_weight "auto", length_scale "isotropic": ``qsg_jax.direct.defaults.choose``
  (a smoothed, repeated 5-fold CV of the direct solver on the labeled rows; the given values
  stay fixed);
* "ard": the isotropic choice first, then ``qsg_jax.direct.learn_length_scales`` from it (one
  length scale per feature), then lam and labeled_weight chosen again ("auto" ones) on the
  rescaled inputs with sigma = 1/2; the descent runs from the choice's one-SE point, and where
  that is at the lam grid's largest value also from its peak (``Choice.peak``), the start whose
  second choice scores higher kept (with lam and labeled_weight both given there is no second
  choice: the one-SE start);
* length_scale "auto": "ard" where the labels allow more than one scale (``bandwidths.
  scale_groups``: one per feature with ``bandwidths.MIN_PER_SCALE`` rows of the smallest class
  per feature; with fewer, one per kind where two-valued indicator columns sit beside others
  and the labels allow two, then refined per feature toward them) and lam > 0 (ARD's held-out
  surrogate needs it; "ard" with lam = 0 is refused), else "isotropic" (one common factor of
  the scales moved test AUC by noise only and doubled the cost:
  ``experiments/reproduction/RESULTS.md#ard``; one per kind: ``#kinds``; refined: ``#refine``).
  "auto" does not warn that the scales are tied (``LengthScaleWarning``); "ard" does. With one
  feature "auto" keeps the CV's isotropic choice (a descent would only refine that one scale).

Only labeled rows of the training data are cross-validated; nothing else is looked at, and
each copied (row, class) once (``folds.distinct``; repeats count as copies only in data with a
continuous column, not where every column takes few values): copies of a held-out row in the
training folds rewarded a lookup table (100 rows each given 3 times: the narrowest kernel and lam
2e-3, test AUC 0.87 against 0.97 once each). The fit itself trains on every row.
"""

import warnings
from typing import NamedTuple, Optional

import numpy as np

from qsg_jax import folds
from qsg_jax.direct import bandwidths
from qsg_jax.direct import defaults
from qsg_jax.estimators import _params


class Resolved(NamedTuple):
  """The hyper-parameters of one fit, in ``FitConfig``'s terms."""
  sigma: float               # kernel parameter on the (column-scaled) inputs.
  lam: float
  gamma: object              # float or list of k-1 floats.
  column_scale: np.ndarray   # [d] extra division of the scaled inputs (ARD), else ones.
  cv_score: float            # the automatic choice's smoothed CV AUC (NaN: none ran).


def check_ard_lam(length_scale, lam) -> None:
  """Refuses length_scale "ard" with lam = 0 before the fit: ARD's held-out surrogate
  (``bandwidths.learn_length_scales``) needs lam > 0. ("auto" then keeps the isotropic choice.)"""
  if isinstance(length_scale, str) and length_scale == _params.ARD and not _params.is_auto(
      lam) and float(lam) == 0.0:
    raise ValueError("length_scale='ard' needs lam > 0 (its per-feature scales are learned on a "
                     "held-out surrogate that lam = 0 leaves unregularized); received lam=0. "
                     "Pass lam > 0 (or lam='auto'), or length_scale='isotropic'.")


def wants_ard(length_scale, lam: float, y_l, num_classes: int, x_l, x_u) -> bool:
  """Whether ``length_scale`` ("auto", "ard", "isotropic" or a value) learns length scales at
  the regularization ``lam`` used: "auto" where the labels allow more than one (per feature, or
  per kind of feature: ``bandwidths.scale_groups``) and lam > 0 (ARD needs it)."""
  if not isinstance(length_scale, str):
    return False
  live = bandwidths.live_features(x_l, x_u)      # constant columns are not counted
  return length_scale == _params.ARD or (
      length_scale == _params.AUTO and lam > 0 and bandwidths.scale_groups(
          y_l, num_classes, bandwidths.indicator_features(
              x_l[:, live], None if x_u is None else x_u[:, live])).max() > 0)


def resolve(length_scale, sigma: Optional[float], lam, gamma, x_l, y_l, x_u, *, num_classes: int,
            seed: int) -> Resolved:
  """The values of one fit (module docstring).

  Args:
    length_scale: the estimator's parameter ("auto", "ard", "isotropic", or a value already
      folded into ``sigma``).
    sigma: the kernel parameter of a given length_scale (None for the strings).
    lam: "auto" or a float.
    gamma: "auto", a float or k-1 floats (1.0 when there is no unlabeled row).
    x_l: [n_l, d] float32 scaled labeled rows; y_l: [n_l] classes 0..k-1.
    x_u: [n_u, d] scaled unlabeled rows or None.
    num_classes: k.
    seed: the fit's seed (folds, subsamples, landmarks).
  """
  ones = np.ones(x_l.shape[1])
  x_l, y_l = folds.distinct(x_l, y_l)   # module docstring
  free_gamma = _params.is_auto(gamma)
  shared_gamma = None if free_gamma else float(np.mean(gamma))   # a per-split list: its mean
  if sigma is not None and not _params.is_auto(lam) and not free_gamma:
    return Resolved(float(sigma), float(lam), gamma, ones, float("nan"))
  fixed_lam = None if _params.is_auto(lam) else float(lam)
  choice = defaults.choose(x_l, y_l, x_u, num_classes=num_classes, seed=seed, lam=fixed_lam,
                           sigma=sigma, gamma=shared_gamma)
  best = choice.best
  chosen_gamma = best["gamma"] if free_gamma else gamma
  if (sigma is not None or not choice.num_folds
      or not wants_ard(length_scale, best["lam"], y_l, num_classes, x_l, x_u)):
    return Resolved(best["sigma"], best["lam"], chosen_gamma, ones, choice.score)
  if fixed_lam is not None and not free_gamma:   # no second choice to compare starts with
    return Resolved(0.5, fixed_lam, gamma, _learn(length_scale == _params.AUTO, best, x_l, y_l,
                                                  x_u, num_classes, seed), choice.score)
  # ARD descends to a local optimum from the isotropic choice: from the CV's one-SE point, and
  # where that sits at the grid's largest lam (the rule ran off the grid: the CV is flat in lam
  # there, and so regularized a start can hide a feature) from its peak too, the start whose
  # second choice scores higher kept (ties: the one-SE one; RESULTS.md#ard-start).
  lams, peak = choice.grid["lam"], choice.peak
  fits = []
  for start in [best] + ([peak] if peak != best and lams.size > 1 and best["lam"] == lams.max()
                         else []):
    scales = _learn(length_scale == _params.AUTO or bool(fits), start, x_l, y_l, x_u,
                    num_classes, seed)   # (the second start's warnings repeat the first's)
    again = defaults.choose(x_l / scales, y_l, None if x_u is None else x_u / scales,
                            num_classes=num_classes, seed=seed, lam=fixed_lam, sigma=0.5,
                            gamma=shared_gamma)
    fits.append((scales, again))
  scales, again = max(fits, key=lambda fit: np.nan_to_num(fit[1].score, nan=-np.inf))
  return Resolved(0.5, again.best["lam"], again.best["gamma"] if free_gamma else gamma, scales,
                  again.score)


def _learn(quiet, start, x_l, y_l, x_u, num_classes, seed) -> np.ndarray:
  """[d] length scales learned from the isotropic point ``start`` (lam, sigma, gamma); ``quiet``:
  no ``LengthScaleWarning`` (length_scale "auto" asked for what the labels allow)."""
  with warnings.catch_warnings():
    if quiet:
      warnings.simplefilter("ignore", bandwidths.LengthScaleWarning)
    return np.asarray(bandwidths.learn_length_scales(
        x_l, y_l, x_u, num_classes=num_classes, lam=start["lam"], gamma=start["gamma"],
        length_scale=_params.length_scale_of(start["sigma"]), key=seed), np.float64)
