"""The estimators' "auto" and "ard" values: lam, the kernel and labeled_weight chosen from the data.

``resolve`` turns the estimator's length_scale / lam / labeled_weight (each "auto" or a value;
length_scale also "ard") into the values a fit uses, on the inputs already scaled as the fit
sees them:

* any "auto": ``qsg_jax.direct.defaults.choose`` (a smoothed, repeated 5-fold CV of the direct
  solver on the labeled rows; the given values stay fixed);
* "ard": the isotropic "auto" choice first, then ``qsg_jax.direct.learn_length_scales`` from it
  (one length scale per feature), then lam and labeled_weight chosen again ("auto" ones) on the
  rescaled inputs with sigma = 1/2.

Only labeled rows of the training data are cross-validated; nothing else is looked at.
"""

from typing import NamedTuple, Optional

import numpy as np

from qsg_jax.direct import defaults
from qsg_jax.estimators import _params


class Resolved(NamedTuple):
  """The hyper-parameters of one fit, in ``FitConfig``'s terms."""
  sigma: float               # kernel parameter on the (column-scaled) inputs.
  lam: float
  gamma: object              # float or list of k-1 floats.
  column_scale: np.ndarray   # [d] extra division of the scaled inputs (ARD), else ones.
  cv_score: float            # the automatic choice's smoothed CV AUC (NaN: none ran).


def _ard_scales(x_l, y_l, x_u, k, lam, gamma, length_scale, seed):
  """Per-feature length scales of ``direct.learn_length_scales`` (helper ARD's module)."""
  try:
    from qsg_jax.direct import bandwidths   # pylint: disable=g-import-not-at-top
  except ImportError as e:   # pragma: no cover - the module ships with the package
    raise ValueError("length_scale='ard' needs qsg_jax.direct.bandwidths, which is missing "
                     f"from this installation ({e}); pass length_scale='auto'.") from None
  return np.asarray(bandwidths.learn_length_scales(
      x_l, y_l, x_u, num_classes=k, lam=lam, gamma=gamma, length_scale=length_scale,
      key=seed), np.float64)


def resolve(length_scale, sigma: Optional[float], lam, gamma, x_l, y_l, x_u, *, num_classes: int,
            seed: int) -> Resolved:
  """The values of one fit (module docstring).

  Args:
    length_scale: the estimator's parameter ("auto", "ard", or a value already folded into
      ``sigma``).
    sigma: the kernel parameter of a given length_scale (None for "auto" / "ard").
    lam: "auto" or a float.
    gamma: "auto", a float or k-1 floats (1.0 when there is no unlabeled row).
    x_l: [n_l, d] float32 scaled labeled rows; y_l: [n_l] classes 0..k-1.
    x_u: [n_u, d] scaled unlabeled rows or None.
    num_classes: k.
    seed: the fit's seed (folds, subsamples, landmarks).
  """
  ones = np.ones(x_l.shape[1])
  free_gamma = _params.is_auto(gamma)
  shared_gamma = None if free_gamma else float(np.mean(gamma))   # a per-split list: its mean
  if sigma is not None and not _params.is_auto(lam) and not free_gamma:
    return Resolved(float(sigma), float(lam), gamma, ones, float("nan"))
  fixed_lam = None if _params.is_auto(lam) else float(lam)
  choice = defaults.choose(x_l, y_l, x_u, num_classes=num_classes, seed=seed, lam=fixed_lam,
                           sigma=sigma, gamma=shared_gamma)
  best = choice.best
  chosen_gamma = best["gamma"] if free_gamma else gamma
  if not (isinstance(length_scale, str) and length_scale == _params.ARD) or not choice.num_folds:
    return Resolved(best["sigma"], best["lam"], chosen_gamma, ones, choice.score)
  scales = _ard_scales(x_l, y_l, x_u, num_classes, best["lam"], best["gamma"],
                       _params.length_scale_of(best["sigma"]), seed)
  if fixed_lam is not None and not free_gamma:
    return Resolved(0.5, fixed_lam, gamma, scales, choice.score)
  again = defaults.choose(x_l / scales, y_l, None if x_u is None else x_u / scales,
                          num_classes=num_classes, seed=seed, lam=fixed_lam, sigma=0.5,
                          gamma=shared_gamma)
  return Resolved(0.5, again.best["lam"], again.best["gamma"] if free_gamma else gamma, scales,
                  again.score)
