"""Data-driven defaults: lam, sigma and gamma chosen by a cheap CV of the direct solver.

What ``QSGS2AUC()`` / ``QS3ORAO()`` do with ``length_scale``, ``lam`` or ``labeled_weight`` left
at "auto" (issue 27, "defaults that work"; with enough labels per feature the estimators then
learn per-feature length scales, ``bandwidths``, and call ``choose`` again on the rescaled data):

    choice = direct.defaults.choose(x_l, y_l, x_u, seed=0)      # any of lam/sigma/gamma fixed
    result = direct.fit(x_l, y_l, x_u, key=0, **choice.best)

Steps (every one a pure function of the data and ``seed``):

1. The kernel scale of the data: m = the median of ||x - x'||^2 over pairs of (at most
   ``SCALE_SAMPLE``) training points. The sigma grid is 2^a / m for a in ``SIGMA_POWERS``
   (-4..6), so that it follows the data (d = 3 or 62 features, scaled or not), not a fixed
   range; lam runs over ``LAMS`` (2^-15..2^3 in factors of 4), gamma over ``GAMMAS``.
2. Stratified ``NUM_FOLDS``-fold CV (fewer when the smallest class has fewer points; 2 at least)
   on the labeled points, ``REPEATS`` times with fold seeds seed, seed + 1, ...; the CV trains
   on at most ``MAX_UNLABELED`` (2,000) unlabeled and ``MAX_LABELED`` (1,000) labeled points
   (stratified subsamples), every task solved from shared moments (``direct.cross_validate``,
   Nystrom p = 256).
3. The mean validation AUC over folds, repeats and ordinal splits, averaged over each grid
   point's 3 x 3 x 3 neighbourhood (lam, sigma, gamma; ``smooth``): with 200 labels a single
   point's CV AUC is noisy (a few positives per fold), and the plateau it sits on is a better
   guide than its peak.
4. The one-standard-error rule (``simplest_within_one_se``): of the points whose smoothed score
   is within one standard error (over the folds of every repeat, smoothed alike) of the best,
   the simplest wins: the widest kernel, then the largest lam. With a handful of positives the
   CV cannot tell most points apart, and its best one was often a narrow, barely regularized
   corner: on development splits of accelerometer (3-4 positives among 200 labels) two of three
   default fits ranked test points at chance (AUC 0.49) where SVC and LogisticRegression got
   0.71-0.87; with the rule 0.80-0.87 (0.82-0.85 with the estimators' ranked long-tailed
   features, ``scale_inputs``). Measurements: ``RESULTS.md#one-se``.

Too few labels to cross-validate (a class with fewer than ``MIN_CLASS_POINTS`` = 5 distinct
labeled points): ``FALLBACK``, the papers' defaults (sigma = 0.1, lam = 1e-3, gamma = 0.5), for
the axes left free, with a ``UserWarning``. With c = 2, 3 or 4 points in the smallest class the
CV's choice lost to them on average (9 sets x 8 draws: test AUC +0.019 / +0.007 / -0.009 for
the papers' values with 4c points in the other class; on 3 of the sets +0.070 / +0.024 / +0.035
with 200 - c, the peers' protocol, where accelerometer's development trials with c = 4 fell to
AUC 0.54-0.63 against 0.69-0.77; from c = 5 on the CV was ahead in the first design:
``RESULTS.md#few-labels``).

Test AUC against the tuned peers and the cost per fit: ``experiments/reproduction/RESULTS.md#peers``
(the subsamples bound the cost whatever the number of points).
"""

import warnings
from typing import NamedTuple, Optional

import numpy as np
from scipy import ndimage

from qsg_jax import _validation as validation
from qsg_jax import folds
from qsg_jax.direct import fitting
from qsg_jax.direct import selection

LAMS = 2.0 ** np.arange(-15, 4, 2)            # 10 values, 3e-5 .. 8
SIGMA_POWERS = np.arange(-4, 7)                # sigma = 2^a / median ||x - x'||^2: 11 values
GAMMAS = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
NUM_FOLDS = 5
REPEATS = 3
MAX_LABELED = 1000       # labeled points the CV sees (a stratified subsample beyond): its
                         # cost grows with them (fully labeled fits: 320 labels 6.7 s, 3,200
                         # 14.3 s with 2,000 here, loaded machine; issue 29 wants <= 2x)
MAX_UNLABELED = 2000     # unlabeled points the CV sees (a uniform subsample beyond)
SCALE_SAMPLE = 1000      # points whose pairwise distances give the data's scale m
NUM_FEATURES = selection.CV_NUM_FEATURES   # Nystrom p of the CV's models (256)
FALLBACK = {"lam": 1e-3, "sigma": 0.1, "gamma": 0.5}   # the papers' defaults (FitConfig)
MIN_CLASS_POINTS = 5     # fewer distinct labeled points in a class: ``FALLBACK`` (measured above)


class Choice(NamedTuple):
  """What ``choose`` returns."""
  best: dict                  # floats lam, sigma, gamma (``direct.fit``'s keyword arguments).
  score: float                # smoothed mean validation AUC of ``best`` (NaN: no CV ran).
  scores: Optional[np.ndarray]  # [n_lam, n_sigma, n_gamma] smoothed mean AUCs, or None.
  grid: dict                  # name -> 1-D float64 array searched (one value: a fixed axis).
  num_folds: int              # folds used per repeat (0: no CV, ``FALLBACK``).

  @property
  def peak(self) -> dict:
    """lam, sigma, gamma of the highest smoothed score (``best`` where no CV ran). Where the
    one-SE ``best`` is at the grid's largest lam, the estimators' length-scale descent starts
    from it too: so regularized a start can hide a feature's effect (sweep Z3: d = 30, lam = 8
    left sin(3 x0) unseen, test AUC 0.76 against 0.88; ``RESULTS.md#ard-start``)."""
    if self.scores is None:
      return dict(self.best)
    index = np.unravel_index(np.argmax(np.where(np.isfinite(self.scores), self.scores, -np.inf)),
                             self.scores.shape)
    return {name: float(self.grid[name][i]) for name, i in zip(("lam", "sigma", "gamma"), index)}


def data_scale(x_labeled, x_unlabeled=None, seed: int = 0) -> float:
  """m = median ||x - x'||^2 over pairs of at most ``SCALE_SAMPLE`` training points (> 0).

  The points: the labeled ones and a uniform sample of the unlabeled ones (``seed``). Constant
  data (m = 0) gives 1.
  """
  x = np.asarray(x_labeled, np.float64)
  if x_unlabeled is not None and len(x_unlabeled):
    x = np.concatenate([x, np.asarray(x_unlabeled, np.float64)])
  rng = np.random.default_rng([seed, 2])
  if x.shape[0] > SCALE_SAMPLE:
    x = x[np.sort(rng.choice(x.shape[0], SCALE_SAMPLE, replace=False))]
  sq = np.sum(x * x, axis=1)
  d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * x @ x.T, 0.0)
  m = float(np.median(d2[np.triu_indices(x.shape[0], 1)])) if x.shape[0] > 1 else 0.0
  return m if m > 0 else 1.0


def standard_error(values: np.ndarray) -> np.ndarray:
  """[...] standard error of the mean of fold values [..., R, F] (NaN skipped; NaN below 2)."""
  flat = values.reshape(values.shape[:-2] + (-1,))
  ok = np.isfinite(flat)
  count = ok.sum(axis=-1)
  square = np.where(ok, flat - folds.nanmean(flat)[..., None], 0.0) ** 2
  var = square.sum(axis=-1) / np.maximum(count - 1, 1)
  return np.where(count > 1, np.sqrt(var / np.maximum(count, 1)), np.nan)


def simplest_within_one_se(scores: np.ndarray, errors: np.ndarray) -> tuple:
  """Index (lam, sigma, gamma) of the simplest grid point whose score is within one standard
  error of the best (the one-standard-error rule of Breiman et al. 1984, as glmnet's lambda.1se).

  Simplest: the smallest sigma (the widest kernel), then the largest lam, then the highest
  score (gamma is not ordered), then the first in grid order. The band is the best finite
  score minus its own error (0 where that is NaN). Scores must have a finite entry.
  """
  best = np.unravel_index(np.argmax(np.where(np.isfinite(scores), scores, -np.inf)),
                          scores.shape)
  error = errors[best] if np.isfinite(errors[best]) else 0.0
  near = np.isfinite(scores) & (scores >= scores[best] - error)
  lam, sigma, _ = np.indices(scores.shape)
  order = np.lexsort((-np.where(near, scores, -np.inf).ravel(), -lam.ravel(), sigma.ravel(),
                      ~near.ravel()))
  return np.unravel_index(order[0], scores.shape)


def lookup_free(sigmas: np.ndarray, x_l) -> np.ndarray:
  """``sigmas`` without those at which the kernel between neighbouring labeled points is below
  exp(-``fitting.NARROW_EXPONENT``) (the smallest kept in any case): a lookup table of its
  training points, at chance on new rows, which the CV cannot see where its landmarks hold its
  held-out rows (wide data: 500 features, 200 labels and no unlabeled rows chose it, test AUC
  0.50; sweep Z3)."""
  spacing = fitting.nearest_spacing(x_l)
  keep = ~(sigmas * spacing > fitting.NARROW_EXPONENT)   # (NaN spacing: one point, all kept)
  keep[0] = True
  return sigmas[keep]


def sigma_grid(scale: float) -> np.ndarray:
  """The sigma values searched for data of scale m: 2^a / m, a in ``SIGMA_POWERS``."""
  return 2.0 ** SIGMA_POWERS / scale


def smooth(scores: np.ndarray) -> np.ndarray:
  """Mean of each finite entry's 3 x ... x 3 neighbourhood (finite neighbours only); NaN stays."""
  ok = np.isfinite(scores)
  total = ndimage.uniform_filter(np.where(ok, scores, 0.0), size=3, mode="constant")
  count = ndimage.uniform_filter(ok.astype(np.float64), size=3, mode="constant")
  return np.where(ok, total / np.maximum(count, 1e-12), np.nan)


def _in_estimator_names(names) -> str:
  """The fallback values of ``names`` in the estimators' parameters (sigma = 1 / (2 l^2))."""
  renamed = {"sigma": f"length_scale={(0.5 / FALLBACK['sigma']) ** 0.5:.4g}",
             "gamma": f"labeled_weight={FALLBACK['gamma']:g}"}
  shown = [renamed[name] for name in names if name in renamed]
  return f"; in the estimators: {', '.join(shown)}" if shown else ""


def choose(x_labeled, y_labeled, x_unlabeled=None, *, num_classes: Optional[int] = None,
           seed: int = 0, key=None, lam=None, sigma=None, gamma=None) -> Choice:
  """lam, sigma and gamma of the direct solver chosen by a smoothed, repeated k-fold CV.

  The steps, grids and measurements: the module docstring.

  Args:
    x_labeled: [n_l, d] labeled points (scaled as the fit will see them).
    y_labeled: [n_l] int classes 0..k-1.
    x_unlabeled: [n_u, d] unlabeled points or None (then gamma is 1).
    num_classes: k; default max(y_labeled) + 1.
    seed: int >= 0: the folds (seed, seed + 1, ...), the subsamples and the landmarks.
      Copies of a labeled (point, class) count once (``folds.distinct``).
    key: PRNG key or int of the CV's Nystrom landmarks; default ``seed``.
    lam, sigma, gamma: a value fixes that axis (gamma: a scalar); None searches it.

  Returns:
    ``Choice``: ``best`` holds floats lam, sigma, gamma for ``direct.fit``.
  """
  seed = validation.check_count("seed", seed, minimum=0, fix="Pass e.g. seed=0.", maximum=None)
  x_l = validation.check_points("x_labeled", x_labeled, kernel=True)
  y_l, k = validation.check_labels(y_labeled, x_l.shape[0], num_classes)
  validation.refuse_one_point("x_labeled", x_l)
  x_l, y_l = folds.distinct(x_l, y_l)   # copies split by the folds would reward a lookup table
  if isinstance(x_unlabeled, np.ndarray) and x_unlabeled.size == 0:
    x_unlabeled = None
  if x_unlabeled is not None:
    x_unlabeled = validation.check_points("x_unlabeled", x_unlabeled, dim=x_l.shape[1], kernel=True,
                                          columns=validation.column_names(x_labeled))
  rng = np.random.default_rng([seed, 1])
  if gamma is not None:   # one shared value: a per-split list is not averaged without a word
    if np.ndim(gamma) != 0:
      raise ValueError(f"gamma must be one number here (the CV searches one gamma shared by the "
                       f"splits); received {np.ravel(gamma).tolist()[:6]}. Pass a scalar (e.g. "
                       "the mean), or None to search it.")
    gamma = validation.check_gamma(gamma)
    if x_unlabeled is None and gamma < 1:
      raise ValueError(f"no unlabeled data but gamma={gamma:g} < 1 gives weight to the "
                       "unlabeled risks: pass x_unlabeled, or gamma=1 (or None) for supervised "
                       "training.")
  fixed = {"lam": lam, "sigma": sigma, "gamma": 1.0 if x_unlabeled is None else gamma}
  for name in ("lam", "sigma"):
    if fixed[name] is not None:
      fixed[name] = validation.check_positive(name, fixed[name], allow_zero=name == "lam")
  grid = {"lam": LAMS, "sigma": None, "gamma": GAMMAS}
  counts = np.bincount(y_l, minlength=k)
  num_folds = min(NUM_FOLDS, int(counts.min()))
  if counts.min() < MIN_CLASS_POINTS or all(value is not None for value in fixed.values()):
    best = {name: FALLBACK[name] if value is None else float(value)
            for name, value in fixed.items()}
    free = [name for name, value in fixed.items() if value is None]
    if free:   # too few held out: say that the papers' values stand in for the choice
      fewest, names = int(counts.min()), ", ".join(free)
      why = (f"a single distinct labeled point (class counts [{{}}]), so no fold can hold it out "
             f"and {names} cannot be cross-validated" if fewest == 1 else
             f"{fewest} distinct labeled points (class counts [{{}}]), fewer than "
             f"{MIN_CLASS_POINTS}: with so few, a cross-validated {names} lost to fixed values on "
             "average (RESULTS.md, few-labels)")
      warnings.warn(f"class {int(np.argmin(counts))} (index in the sorted labeled classes) has "
                    f"{why.format(validation.summarize(counts.tolist()))}: the papers' values "
                    f"({', '.join(f'{name}={FALLBACK[name]:g}' for name in free)}) are used"
                    f"{_in_estimator_names(free)}. Label more points of that class, or pass the "
                    "values.", UserWarning, stacklevel=validation.outside_stacklevel())
    return Choice(best, float("nan"), None,
                  {name: np.array([value]) for name, value in best.items()}, 0)
  if x_l.shape[0] > MAX_LABELED:
    keep = folds.stratified_subsample(y_l, MAX_LABELED, num_folds, rng)
    x_l, y_l = x_l[keep], y_l[keep]
  x_u = x_unlabeled
  if x_u is not None and x_u.shape[0] > MAX_UNLABELED:
    x_u = x_u[np.sort(rng.choice(x_u.shape[0], MAX_UNLABELED, replace=False))]
  if fixed["sigma"] is None:
    grid["sigma"] = lookup_free(sigma_grid(data_scale(x_l, x_u, seed)), x_l)
  grid = {name: np.array([fixed[name]], np.float64) if fixed[name] is not None else values
          for name, values in grid.items()}
  result = selection.cross_validate(x_l, y_l, x_u, grid=grid, num_folds=num_folds, seed=seed,
                                    num_repeats=REPEATS, key=seed if key is None else key,
                                    num_classes=k, num_features=NUM_FEATURES)
  per_fold = result.fold_scores.reshape(result.fold_scores.shape[:3] + (REPEATS, -1, k - 1))
  per_repeat = folds.nanmean(folds.nanmean(np.moveaxis(per_fold, -2, -1)))   # [L, S, G, R]
  scores = smooth(np.sum(per_repeat, axis=-1) / REPEATS)
  if not np.isfinite(scores).any():
    raise ValueError("every grid point of the automatic choice is ill-posed; pass lam, "
                     "length_scale and labeled_weight explicitly.")
  index = simplest_within_one_se(scores, smooth(standard_error(folds.nanmean(per_fold))))
  best = {name: float(grid[name][i]) for name, i in zip(("lam", "sigma", "gamma"), index)}
  return Choice(best, float(scores[index]), scores, grid, num_folds)
