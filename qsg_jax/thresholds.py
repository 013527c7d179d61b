"""Ordinal thresholds b_1 < ... < b_{k-1} on a trained ranking function (ordinal paper, L_AT).

The all-threshold loss (Fathony, Bashiri and Ziebart 2017) on labeled scores f_i with classes
y_i in 0..k-1 is

    L_AT(b) = sum_i [ sum_{j < y_i} delta(f_i - b_j) + sum_{j >= y_i} delta(b_j - f_i) ],

with delta(z) = [margin - z]_+ ("hinge") or [margin - z]_+^2 ("squared_hinge"). It separates into
k-1 one-dimensional convex problems, one per threshold, each piecewise linear or quadratic with
one breakpoint per point; after one sort the minimizer is found exactly from cumulative sums.
Where the minimizer is an interval (flat objective) its midpoint is returned. Lemma 1 of the
ordinal paper says the optimal thresholds are unique and ordered; what holds for this solver
(``tests/test_thresholds.py`` checks it over random scores) is: every b_j minimizes its problem,
b_1 <= ... <= b_{k-1}, strictly when the classes' scores do not overlap, and the squared hinge
with a margin > 0 has a unique minimizer whenever a point lies inside the margin. (Otherwise a
minimizer may be an interval: the hinge at margin 0, classes separated by more than twice the
margin; tied scores across classes can give equal thresholds. The midpoint rule makes the
answer unique.) Predicted class = number of thresholds below f(x) (0-based; the paper's 1 + that
count).

Precision: concrete scores are solved on the host in float64 (one NumPy copy of ``_solve_one``),
so float64 input gets exact thresholds; under jit the same function runs with ``jax.numpy``.
"""

import functools
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
import numpy as np
from scipy import optimize
from scipy import special

from qsg_jax import _validation as validation

SURROGATES = ("hinge", "squared_hinge")


def _solve_one(xp, scores, positive, margin, surrogate):
  """Exact minimizer of sum_{pos} delta(f - b) + sum_{neg} delta(b - f) over scalar b.

  Written once for both array modules: ``xp`` is NumPy (concrete input, on the host in float64)
  or ``jax.numpy`` (under jit, in the scores' dtype). Point i contributes from its breakpoint
  z_i = f_i - margin (positive, active for b > z_i) or z_i = f_i + margin (negative, active for
  b < z_i).
  """
  z = xp.where(positive, scores - margin, scores + margin)
  order = xp.argsort(z)
  z, pos = z[order], positive[order]
  pos_f = pos.astype(z.dtype)
  neg_f = 1.0 - pos_f
  zero = xp.zeros(1, z.dtype)
  # Right of breakpoint r (b in (z_r, z_{r+1})): active positives are those at 0..r, active
  # negatives those at r+1..n-1. Index r = -1 is the interval left of every breakpoint.
  cnt_pos = xp.concatenate([zero, xp.cumsum(pos_f)])                    # [n+1], r = -1..n-1
  sum_pos = xp.concatenate([zero, xp.cumsum(pos_f * z)])
  cnt_neg = xp.sum(neg_f) - xp.concatenate([zero, xp.cumsum(neg_f)])
  sum_neg = xp.sum(neg_f * z) - xp.concatenate([zero, xp.cumsum(neg_f * z)])
  left = xp.concatenate([xp.full(1, -xp.inf, z.dtype), z])             # interval ends
  right = xp.concatenate([z, xp.full(1, xp.inf, z.dtype)])
  if surrogate == "hinge":
    # The objective decreases while the slope is < 0, is flat where it is 0 and increases
    # after; the slope runs from -n_neg to n_pos (both > 0), so both ends below are finite. The
    # minimizers are [left[r1], left[r2]] whatever order ties were sorted in; take its middle.
    slope = cnt_pos - cnt_neg                                           # nondecreasing in r
    lo, hi = left[xp.argmax(slope >= 0)], left[xp.argmax(slope > 0)]
    return 0.5 * lo + 0.5 * hi
  # squared hinge: derivative on interval r is 2 [(cnt_pos + cnt_neg) b - sum_pos - sum_neg].
  active = cnt_pos + cnt_neg
  root = (sum_pos + sum_neg) / xp.where(active > 0, active, 1.0)
  mid = 0.5 * left + 0.5 * right                  # halves first: no overflow near the max
  candidate = xp.where(active > 0, root, mid)
  inside = (candidate >= left) & (candidate <= right)
  # An interval with no active point has loss 0, the minimum: the minimizers are exactly that
  # interval [max of the negatives' z, min of the positives' z], so its midpoint is the answer
  # (a root at one of its ends also minimizes, and rounding decided which end was found first).
  flat = active == 0
  return candidate[xp.where(xp.any(flat), xp.argmax(flat), xp.argmax(inside))]


def check_surrogate(surrogate: str):
  """Raises ``ValueError`` unless ``surrogate`` is one of ``SURROGATES``."""
  if not isinstance(surrogate, str) or surrogate not in SURROGATES:
    raise ValueError(f"unknown surrogate {surrogate!r:.60}; expected one of {SURROGATES}.")
  return surrogate


def fit_thresholds(scores: ArrayLike, labels: ArrayLike, num_classes: int, surrogate: str = "hinge",
                   margin: float = 0.0):
  """Thresholds minimizing the all-threshold loss, solved exactly per threshold.

  Concrete input (NumPy, pandas, lists, JAX arrays outside jit) is solved on the host in float64,
  so float64 scores that float32 would merge (1e8 + 0.25 and 1e8 + 0.5) or overflow (1e300)
  get their exact thresholds; under ``jax.jit`` / ``vmap`` the same solver runs on the device in
  the scores' dtype.

  Args:
    scores: [n] labeled scores f(x_i).
    labels: [n] int classes 0..k-1 (every class present, so every split has both sides).
    num_classes: k >= 2, static.
    surrogate: "hinge" or "squared_hinge", static.
    margin: margin of the surrogate (0 by default: the scale of f is set by the AUC
      objective, not by the thresholds).

  Returns:
    [k-1] thresholds, nondecreasing: a NumPy float64 array for concrete float64 or integer
    scores (exact), else a JAX array of the scores' float dtype (float32 for float16/float32/bool
    scores; computed in float64 and rounded once). Under jit, NaN scores give NaN thresholds
    (and a missing class, which cannot be checked there, gives a meaningless threshold).

  Raises:
    ValueError: scores and labels not both of shape [n]; concrete non-finite scores, labels
      outside 0..k-1 (1..k: "subtract 1") or a class 0..k-1 with no point; k < 2; an unknown
      surrogate; a margin that takes the thresholds beyond float64.
  """
  num_classes = validation.check_num_classes(num_classes)
  check_surrogate(surrogate)
  _check_shapes(scores, labels)
  if any(validation.is_traced(v) for v in (scores, labels, margin)):
    return _fit_thresholds(jnp.asarray(scores), jnp.asarray(labels), num_classes, surrogate,
                           margin)
  _check_labeled_scores(scores, labels, num_classes, "the thresholds")
  margin = validation.check_positive("margin", margin, allow_zero=True)
  exact, host = _host_scores(scores)
  labels = np.asarray(labels).astype(np.int64)
  with np.errstate(over="ignore", invalid="ignore"):
    b = np.array([_solve_one(np, host, labels > j, margin, surrogate)
                  for j in range(num_classes - 1)], np.float64)
  if not np.all(np.isfinite(b)):
    raise ValueError(f"fit_thresholds: margin={margin:g} with scores up to "
                     f"{np.max(np.abs(host)):.3g} puts the thresholds beyond float64; use a "
                     "margin on the scale of the scores.")
  return b if exact else jnp.asarray(b, jnp.promote_types(np.asarray(scores).dtype, jnp.float32))


def _host_scores(scores):
  """(exact, float64 NumPy scores): exact when float32 would round them (float64, integers)."""
  arr = np.asarray(scores)
  exact = arr.dtype.kind in "iu" or (arr.dtype.kind == "f" and arr.dtype.itemsize > 4)
  return exact, arr.astype(np.float64)


def _check_shapes(scores, labels):
  """Raises ``ValueError`` unless scores and labels are vectors of one length (tracers too)."""
  score_shape, label_shape = np.shape(scores), np.shape(labels)
  if len(score_shape) != 1 or label_shape != score_shape:
    raise ValueError(f"scores and labels must both have shape [n] (one score and one class per "
                     f"labeled point); received {score_shape} and {label_shape}. Pass the "
                     "labeled points' scores as a vector (scores.reshape(-1) for [n, 1]).")


def _check_labeled_scores(scores, labels, num_classes, what):
  """The concrete checks of a fit to labeled scores (``what``: "the thresholds" or "the
  probabilities"): finite scores, labels 0..k-1, every class present."""
  validation.check_scores("scores", scores, meaning=f"{what.split()[-1]} fitted to them have no "
                          f"meaning. " + validation.diverged(f"fit {what}"))
  validation.check_class_labels(labels, num_classes)
  _check_every_class(labels, num_classes)


def _check_every_class(labels, num_classes):
  """Raises ``ValueError`` when a class 0..k-1 has no point (a no-op on tracers).

  Threshold j separates classes <= j from classes > j; with a class missing, a threshold sits
  against one side only and its value means nothing.
  """
  if validation.is_traced(labels):
    return
  counts = np.bincount(np.asarray(labels).astype(np.int64).reshape(-1), minlength=num_classes)
  missing = np.nonzero(counts == 0)[0]
  if missing.size:
    raise ValueError(
        f"fit_thresholds needs every class 0..{num_classes - 1} among the labels; class(es) "
        f"[{validation.summarize(missing.tolist())}] have no point (counts per class: "
        f"[{validation.summarize(counts.tolist())}]). Pass num_classes = the number of classes, "
        "or labels of every class.")


@functools.partial(jax.jit, static_argnames=("num_classes", "surrogate"))
def _fit_thresholds(scores, labels, num_classes, surrogate, margin):
  scores = scores.astype(jnp.promote_types(scores.dtype, jnp.float32))
  margin = jnp.asarray(margin, scores.dtype)
  splits = jnp.arange(num_classes - 1)
  b = jax.vmap(lambda j: _solve_one(jnp, scores, labels > j, margin, surrogate))(splits)
  return jnp.where(jnp.all(jnp.isfinite(scores)), b, jnp.nan)


def all_threshold_loss(thresholds: ArrayLike, scores: ArrayLike, labels: ArrayLike,
                       surrogate: str = "hinge", margin: float = 0.0) -> jax.Array:
  """L_AT(b) written directly (for tests and diagnostics)."""
  j = jnp.arange(thresholds.shape[0])[None, :]
  above = labels[:, None] > j                           # point should be above threshold j
  z = jnp.where(above, scores[:, None] - thresholds[None, :], thresholds[None, :] - scores[:, None])
  hinge = jnp.maximum(0.0, margin - z)
  return jnp.sum(hinge if surrogate == "hinge" else jnp.square(hinge))


def predict_classes(scores: ArrayLike, thresholds: ArrayLike) -> jax.Array:
  """Class 0..k-1 = number of thresholds strictly below the score.

  Concrete scores and thresholds are compared on the host in their own precision (float64 stays
  float64, like ``fit_thresholds``); under jit on the device.

  Args:
    scores: [n] scores f(x).
    thresholds: [k-1] thresholds.

  Returns:
    [n] int32 classes; under jit, -1 (no class) where a score is NaN or any threshold is NaN.

  Raises:
    TypeError: non-numeric scores or thresholds (strings).
    ValueError: concrete NaN scores or thresholds (infinite ones order as usual), wrong ranks.
  """
  traced = any(validation.is_traced(v) for v in (scores, thresholds))
  arrays = []
  for name, values in (("scores", scores), ("thresholds", thresholds)):
    if validation.is_traced(values):
      arrays.append(values)
      continue
    if type(values).__module__.startswith("scipy.sparse"):
      raise TypeError(f"{name} is a scipy sparse matrix; pass a dense vector ({name}.toarray()).")
    arr = validation.as_numbers(values, name)   # bfloat16 / float8 read as float32
    if arr.dtype != bool and (not np.issubdtype(arr.dtype, np.number)
                              or np.issubdtype(arr.dtype, np.complexfloating)):
      raise TypeError(f"{name} must be real numbers; received dtype {arr.dtype}. Pass the "
                      f"{'output of fit_thresholds' if name == 'thresholds' else 'model scores'}"
                      " as a float array.")
    nan = np.isnan(arr.astype(np.float64))
    if nan.any():   # a class, not an AUC: its own words (infinite values order as usual)
      first = np.unravel_index(int(np.argmax(nan.reshape(-1))), arr.shape)
      where = f"row {first[0]}" if arr.ndim == 1 else f"index {tuple(int(i) for i in first)}"
      cause = ("a NaN score has no class (under jit predict_classes gives it -1). "
               + validation.diverged("predict") if name == "scores" else "fit_thresholds gives "
               "NaN thresholds for scores that were not finite: fit them on a model's finite "
               "scores.")
      raise ValueError(f"{name} contain {int(nan.sum())} NaN values (first at {where}); "
                       f"{cause}")
    arrays.append(arr)
  scores, thresholds = arrays
  if np.ndim(scores) != 1 or np.ndim(thresholds) != 1:
    raise ValueError(f"scores must have shape [n] and thresholds [k-1]; received "
                     f"{np.shape(scores)} and {np.shape(thresholds)}.")
  if not traced:
    return jnp.asarray(np.sum(scores[:, None] > thresholds[None, :], axis=1), jnp.int32)
  scores, thresholds = jnp.asarray(scores), jnp.asarray(thresholds)
  classes = jnp.sum(scores[:, None] > thresholds[None, :], axis=1).astype(jnp.int32)
  undefined = jnp.isnan(scores) | jnp.any(jnp.isnan(thresholds))
  return jnp.where(undefined, -1, classes)


# ---- Class probabilities from a ranking score --------------------------------------------------


def fit_probabilities(scores: ArrayLike, labels: ArrayLike, num_classes: int):
  """A cumulative logistic model P(y > j | f) = sigmoid(a f - c_j) of labeled scores, for k = 2
  exactly Platt's (1999) sigmoid: one slope a >= 0 shared by the k-1 ordinal splits and ordered
  cutpoints c_1 <= ... <= c_{k-1}, so that every class probability is >= 0.

  Fitted by L-BFGS-B (bounded, exact gradient) on the sum over splits of the binary cross-entropy
  against Platt's smoothed targets: (n_j^+ + 1) / (n_j^+ + 2) for the points above split j,
  1 / (n_j^- + 2) for those below (separable scores then give a finite slope, as in Platt's and
  scikit-learn's ``CalibratedClassifierCV(method="sigmoid")``). Scores should be held out from
  the model's training (the estimators' ``probability=True`` uses out-of-fold scores), else the
  probabilities are overconfident.

  Args:
    scores: [n] finite labeled scores f(x_i) (concrete: solved on the host in float64).
    labels: [n] int classes 0..k-1, every class present.
    num_classes: k >= 2.

  Returns:
    (slope a, float; cutpoints [k-1] float64 NumPy array), for ``class_probabilities``.

  Raises:
    ValueError: as ``fit_thresholds`` (shapes, non-finite scores, labels, a missing class).
  """
  num_classes = validation.check_num_classes(num_classes)
  _check_shapes(scores, labels)
  _check_labeled_scores(scores, labels, num_classes, "the probabilities")
  s = np.asarray(scores, np.float64)
  labels = np.asarray(labels).astype(np.int64)
  above = labels[:, None] > np.arange(num_classes - 1)[None, :]               # [n, k-1]
  n_above = above.sum(axis=0)
  targets = np.where(above, (n_above + 1.0) / (n_above + 2.0),
                     1.0 / (s.size - n_above + 2.0))
  center, spread = float(np.mean(s)), float(np.std(s))
  u = (s - center) / spread if spread > 0 else np.zeros_like(s)   # equal scores: slope 0

  def cutpoints(theta):   # theta = [a, c_1, increments >= 0]
    return theta[1] + np.concatenate([[0.0], np.cumsum(theta[2:])])

  def loss_and_grad(theta):
    z = theta[0] * u[:, None] - cutpoints(theta)[None, :]
    residual = special.expit(z) - targets                         # d loss / d z
    d_cut = -residual.sum(axis=0)                                   # d loss / d c_j
    grad = np.concatenate([[np.sum(residual * u[:, None]), d_cut.sum()],
                           np.cumsum(d_cut[::-1])[::-1][1:]])       # c_j = c_1 + sum of d_<=j
    return np.sum(np.logaddexp(0.0, z) - targets * z) / s.size, grad / s.size

  start = special.logit(1.0 - (n_above + 1.0) / (s.size + 2.0))    # the classes' frequencies
  theta = optimize.minimize(
      loss_and_grad, np.concatenate([[1.0, start[0]], np.maximum(np.diff(start), 0.0)]),
      jac=True, method="L-BFGS-B", options={"ftol": 1e-13, "gtol": 1e-9},
      bounds=[(0.0, None), (None, None)] + [(0.0, None)] * (num_classes - 2)).x
  slope = theta[0] / spread if spread > 0 else 0.0
  return float(slope), cutpoints(theta) + slope * center


def class_probabilities(scores: ArrayLike, slope: float, cutpoints: ArrayLike) -> np.ndarray:
  """[n, k] float64 class probabilities of the cumulative model of ``fit_probabilities``:
  P(y = j) = P(y > j - 1) - P(y > j), with P(y > j) = sigmoid(slope f - c_j), P(y > -1) = 1
  and P(y > k - 1) = 0. Rows sum to 1; no entry is negative (the cutpoints are ordered)."""
  s = np.asarray(scores, np.float64)
  z = slope * s[:, None] - np.asarray(cutpoints, np.float64)[None, :]   # [n, k-1], decreasing
  ones, zeros = np.ones((s.size, 1)), np.zeros((s.size, 1))
  upper = -np.diff(np.concatenate([ones, special.expit(z), zeros], axis=1), axis=1)
  lower = np.diff(np.concatenate([zeros, special.expit(-z), ones], axis=1), axis=1)
  # The same numbers; each difference taken where its two terms are small (no cancellation:
  # far above the cutpoints 1 - sigmoid(z) is 0, sigmoid(-z) keeps the tail).
  above_all = np.concatenate([z, -np.ones((s.size, 1))], axis=1) > 0   # class j's lower z > 0
  return np.maximum(np.where(above_all, lower, upper), 0.0)
