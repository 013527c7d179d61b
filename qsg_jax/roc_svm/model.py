"""``fit`` and ``decision_function``: the checked entry points of the ROC-SVM.

Three models share one objective and one training loop:
  * "linear":   f(x) = alpha + beta^T x                                     (paper Eq. 7)
  * "nystrom":  f(x) = alpha + beta^T v(x), v the Nystrom map of d landmarks  (Eq. 11-12)
  * "gaussian": f(x) = alpha + sum_k theta_k k(x, x_k), exact Gaussian kernel (Eq. 9-10); the
                n x n kernel matrix is built once and checked against free memory.
Each is trained on the incomplete U-statistic (B pairs, B = n by default) or the full one.
"""

import inspect
import time
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax import errors
from qsg_jax.engine import kernels
from qsg_jax import memory
from qsg_jax import metrics
from qsg_jax import numerics
from qsg_jax.roc_svm import nystrom as nystrom_lib
from qsg_jax.roc_svm import objective as objective_lib
from qsg_jax.roc_svm import pairs as pairs_lib
from qsg_jax.roc_svm import train as train_lib

KERNELS = ("linear", "nystrom", "gaussian")
# Default Adamax learning rates: coefficients of the exact kernel model act on n kernel columns
# at once, so their steps are scaled down by the number of training points.
DEFAULT_LEARNING_RATE = 0.05
DEFAULT_SIGMA = 1.0     # the Gaussian kernels' sigma when none is passed
DEFAULT_KERNEL_LEARNING_RATE_TIMES_N = 5.0


class RocSvmModel(NamedTuple):
  """A fitted ROC-SVM; score points with ``decision_function``."""
  kernel: str                          # "linear", "nystrom" or "gaussian".
  coef: jax.Array                      # [p] beta, [d] beta on Nystrom features, or theta
                                       # (one per row of ``support``; 0 on padding).
  intercept: float                     # alpha (0.0 unless a target rate was asked for).
  num_features: int                    # p, checked when scoring.
  sigma: float                         # Gaussian kernel parameter (kernel models).
  feature_map: Optional[nystrom_lib.NystromMap] = None   # "nystrom" only.
  support: Optional[jax.Array] = None  # [m, p] training points (padded), "gaussian" only.
  feature_names: Optional[tuple] = None  # x's column names when it was a data frame: a
                                       # frame scored must have them, in order.


class RocSvmFit(NamedTuple):
  model: RocSvmModel
  objective: objective_lib.Objective
  value: float          # final objective.
  num_steps: int        # gradient steps taken.
  converged: bool       # the relative-change rule stopped training (not max_steps).
  values: np.ndarray    # [num_steps] objective before each step.
  num_pairs: int        # B (incomplete) or n+ n- (full).
  seconds: dict         # wall time of "landmarks" (k-means or sampling; Nystrom only),
                        # "design" (features or kernel matrix, pairs), "compile" and "train".


def check_binary_labels(y, num_points):
  """Labels coded {0, 1} or {-1, +1} as int32 {0, 1}, one per point, both classes present."""
  return validation.check_binary_labels(
      y, "y", num_points, both_classes=True, fix="Binarize explicitly, e.g. y = (labels == "
      "positive_class), or use qsg_jax.roc_svm.ROCSVM, which accepts any two class labels.")


# The integer arguments of ``fit``: name -> (smallest value, what None means or "" where None is
# refused, an example value for the message).
_COUNTS = {
    "num_pairs": (1, "B = n pairs", 1000),
    "num_landmarks": (1, "", 300),
    "kmeans_iters": (0, "", 100),
    "kmeans_sample_size": (1, "cluster every point", 10000),
    "max_steps": (1, "", 2000),
    "patience": (1, "", 10),
    "pairs_per_block": (1, "all pairs at once", 2**22),
}


def check_counts(**counts):
  """The integer arguments of ``fit`` as Python ints (or None where allowed), else an error.

  A count must be a whole number: a bool, a fractional float (2.5), NaN or a string is refused,
  never truncated; an integral float (300.0) is accepted as that integer.

  Raises:
    TypeError: not a whole number (or None where None has no meaning).
    ValueError: below the smallest allowed value.
  """
  checked = {}
  for name, value in counts.items():
    minimum, none_means, example = _COUNTS[name]
    checked[name] = validation.check_count(
        name, value, minimum, allow_none=bool(none_means),
        fix=(f"None: {none_means}. " if none_means else "") + f"Pass e.g. {name}={example} "
        "(fractions are never rounded).")
  return checked


def check_tol(tol):
  """The stopping tolerance as a float >= 0 (0 runs all ``max_steps``) that float32 holds, else
  a clear error."""
  return validation.check_float32_range("tol", validation.check_positive(
      "tol", tol, allow_zero=True, fix="Pass e.g. tol=1e-6.", what="a finite number >= 0 (the "
      "relative change of the objective that stops training; 0 runs all max_steps)"),
      "the ROC-SVM compares it in float32, where it would become inf; a tol of 1 or more "
      "already stops training within a few steps. Pass e.g. tol=1e-6.")


def check_lam(lam):
  """The ridge lambda as a float >= 0 that float32 holds, else a clear error naming ``lam``
  (beyond float32 it became inf inside the objective: NaN after one step, "raise lam")."""
  return validation.check_float32_range(
      "lam", validation.check_positive("lam", lam, allow_zero=True),
      "the ROC-SVM computes in float32, where it would become inf (a NaN objective); a lam "
      "that large leaves beta = 0 anyway. Pass e.g. lam=1e-3 (the default).")


def _design(kernel, key, x, y, pairs, *, sigma, num_landmarks, landmarks, kmeans_iters,
            kmeans_sample_size, seconds):
  """(``PairData`` of the linear problem to solve, Nystrom map, support of the exact kernel).

  Adds the wall time of each stage to ``seconds``: "landmarks" (k-means or sampling), "design"
  (Nystrom features or the kernel matrix, and the padded rows and pairs).
  """
  positive = y > 0
  if kernel == "linear":
    return pairs_lib.make_pair_data(x[positive], x[~positive], pairs), None, None
  if kernel == "nystrom":
    if num_landmarks > x.shape[0]:
      raise ValueError(f"num_landmarks={num_landmarks} exceeds the {x.shape[0]} training points; "
                       "use fewer landmarks.")
    start = time.perf_counter()
    z = jax.block_until_ready(nystrom_lib.select_landmarks(
        key, x, y, num_landmarks, landmarks, kmeans_iters, kmeans_sample_size))
    seconds["landmarks"] = time.perf_counter() - start
    seconds["design"] -= seconds["landmarks"]
    feature_map = nystrom_lib.nystrom_map(z, sigma)
    v = np.asarray(nystrom_lib.nystrom_features(feature_map, x))
    return pairs_lib.make_pair_data(v[positive], v[~positive], pairs), feature_map, None
  # Exact kernel: one coefficient per (padded) row, positives first; the kernel matrix is
  # zeroed on padded rows and columns so that padding never enters f or theta^T K theta.
  points = pairs_lib.make_pair_data(x[positive], x[~positive], pairs)
  m = points.x_pos.shape[0] + points.x_neg.shape[0]
  memory.check_allocation(
      2 * 4 * m * m, f"the exact {x.shape[0]} x {x.shape[0]} Gaussian kernel matrix of the "
      "kernel ROC-SVM", "Use kernel='nystrom' (d landmarks, O(n d) memory) or fewer training "
      "points.")
  gram_pos, gram_neg, support = _masked_gram(points, sigma)
  return points._replace(x_pos=gram_pos, x_neg=gram_neg), None, support


@jax.jit
@numerics.full_precision
def _masked_gram(points, sigma):
  """Kernel rows of the (padded) positives and negatives, zero on padded rows and columns."""
  support = jnp.concatenate([points.x_pos, points.x_neg])
  valid = jnp.concatenate([points.pos_valid, points.neg_valid])
  gram = kernels.gaussian_kernel(support, support, sigma)
  gram = jnp.where(valid[:, None] & valid[None, :], gram, 0.0)
  p = points.x_pos.shape[0]
  return gram[:p], gram[p:], support


_binary_auc = jax.jit(metrics.binary_auc)   # one compiled AUC per test-set size


@jax.jit
@jax.default_matmul_precision("highest")
def _kernel_scores(x, support, coef, sigma):
  return kernels.gaussian_kernel(x, support, sigma) @ coef


def fit(x, y, *, kernel="linear", lam=1e-3, loss="hinge", risk="incomplete", num_pairs=None,
        sigma=None, num_landmarks=300, landmarks="stratified", kmeans_iters=100,
        kmeans_sample_size=nystrom_lib.DEFAULT_KMEANS_SAMPLE_SIZE, optimizer="lbfgs",
        learning_rate=None, max_steps=2000, tol=1e-6, patience=10,
        pairs_per_block=objective_lib.DEFAULT_PAIRS_PER_BLOCK, target_sensitivity=None,
        target_specificity=None, key=0):
  """Trains a ROC-SVM by full-batch Optax steps on the full or incomplete U-statistic.

  The default optimizer is L-BFGS (``optax.lbfgs``, zoom line search), which reaches the
  objective of the paper's 2000 Adamax steps in tens of steps; ``optimizer="adamax"`` runs the
  paper's choice, and any ``optax.GradientTransformation`` can be passed.

  Args:
    x: [n, p] training points (preprocessed, e.g. min-max scaled).
    y: [n] labels, positive where > 0 ({0, 1} or {-1, +1}); both classes present.
    kernel: "linear", "nystrom" (Gaussian kernel through d landmarks) or "gaussian" (exact).
    lam: regularization lambda >= 0.
    loss: "hinge" (paper), "squared_hinge" or "logistic".
    risk: "incomplete" (B random pairs, Eq. 7), "full" (all pairs, streamed in blocks) or
      "full_sorted" (all pairs, exact in O(n log n); hinge and squared hinge).
    num_pairs: B >= 1 for the incomplete risk; None: B = n (the paper's choice).
    sigma: Gaussian kernel parameter, k(x, z) = exp(-sigma ||x - z||^2), of the "nystrom" and
      "gaussian" kernels; None: 1.0 (refused with the linear kernel, which has none).
    num_landmarks: d for "nystrom" (paper: 300).
    landmarks: "uniform", "stratified" (paper's simulations) or "kmeans" (its real data).
    kmeans_iters: most Lloyd iterations for k-means landmarks (0: the k-means++ seeds).
    kmeans_sample_size: k-means runs on a uniform subsample of this many training points
      (None: all of them); the centers summarize the data as well at a fraction of the cost.
    optimizer: "lbfgs" (default), "adamax" (the paper's) or any
      ``optax.GradientTransformation``.
    learning_rate: Adamax rate, optimizer="adamax" only; default 0.05 (linear, Nystrom) or
      5 / n (exact kernel).
    max_steps: most full-batch gradient steps (>= 1).
    tol: stop when the objective's relative change stays below ``tol`` (finite, >= 0; 0 runs
      all ``max_steps``) ...
    patience: ... for this many consecutive steps (>= 1).
    pairs_per_block: pairs per streamed block of the "full" risk; None materializes all of
      them (refused with a clear message when that would not fit in memory).
    target_sensitivity: choose the intercept for this true positive rate (in (0, 1]) on the
      training data.
    target_specificity: or for this true negative rate (at most one of the two).
    key: PRNG key or int seed (landmarks and pairs).

  Returns:
    ``RocSvmFit``.

  Raises:
    ValueError, TypeError: bad input, before anything is compiled (counts must be whole numbers,
    never truncated). InsufficientMemoryError: the exact kernel or one block of pairs would not
    fit. DivergenceError: the objective became non-finite.
  """
  names = validation.column_names(x)
  x = validation.check_points("x", x)
  y = check_binary_labels(y, x.shape[0])
  if kernel not in KERNELS:
    raise ValueError(f"unknown kernel {kernel!r}; expected one of {KERNELS}.")
  lam = check_lam(lam)
  if not isinstance(landmarks, str) or landmarks not in nystrom_lib.LANDMARK_METHODS:
    raise ValueError(f"landmarks must be one of {nystrom_lib.LANDMARK_METHODS}; received "
                     f"{landmarks!r:.60}.")
  if risk != "incomplete" and num_pairs is not None:
    raise ValueError(f"num_pairs={num_pairs!r} applies to risk='incomplete' only; risk={risk!r} "
                     "uses every (positive, negative) pair. Drop num_pairs, or pass "
                     "risk='incomplete'.")
  if kernel == "linear" and sigma is not None:
    raise ValueError(f"sigma={sigma!r} applies to the Gaussian kernels only; kernel='linear' has "
                     "no bandwidth. Drop sigma, or pass kernel='nystrom' (or 'gaussian').")
  sigma = DEFAULT_SIGMA if sigma is None else validation.check_positive("sigma", sigma)
  if np.all(x == x[:1]):
    raise ValueError(f"every row of x is the same point ({validation.summarize(x[0].tolist())}):"
                     " nothing separates the classes. Pass points that differ.")
  validation.check_kernel_scale("x", x, None if kernel == "linear" else sigma)
  if target_sensitivity is not None and target_specificity is not None:
    raise ValueError("pass target_sensitivity or target_specificity, not both.")
  for name, value in (("target_sensitivity", target_sensitivity),
                      ("target_specificity", target_specificity)):
    if value is not None:
      train_lib.check_rate(name, value)
  counts = check_counts(num_pairs=num_pairs, num_landmarks=num_landmarks,
                        kmeans_iters=kmeans_iters, kmeans_sample_size=kmeans_sample_size,
                        max_steps=max_steps, patience=patience, pairs_per_block=pairs_per_block)
  given = lambda **values: {name: (value, _FIT_DEFAULTS[name]) for name, value in values.items()}
  setting = f"kernel={kernel!r}, risk={risk!r}"
  if kernel != "nystrom":   # set away from their defaults where they have no effect: refused
    validation.refuse_ignored(given(
        num_landmarks=num_landmarks, landmarks=landmarks, kmeans_iters=kmeans_iters,
        kmeans_sample_size=kmeans_sample_size), setting, "kernel='nystrom'")
  if risk != "full":
    validation.refuse_ignored(given(pairs_per_block=pairs_per_block), setting,
                              "risk='full' (the streamed full risk)")
  tol = check_tol(tol)
  objective = objective_lib.Objective(
      loss, risk, "kernel" if kernel == "gaussian" else "linear",
      counts["pairs_per_block"]).check()
  n = x.shape[0]
  n_pos = int(y.sum())
  n_neg = n - n_pos
  if risk == "full":
    objective_lib.check_pair_block(n_pos, n_neg, objective.pairs_per_block)
  key = validation.check_key(key)
  key_design, key_pairs = jax.random.split(key)
  advice = ("or try optimizer='adamax' with a smaller learning_rate" if optimizer == "lbfgs"
            else "or change learning_rate (a step too small moves nothing; one too large "
            "overflows)" if optimizer == "adamax" else "or check your optimizer's settings")
  optimizer = train_lib.resolve_optimizer(
      optimizer, learning_rate,
      DEFAULT_KERNEL_LEARNING_RATE_TIMES_N / n if kernel == "gaussian" else DEFAULT_LEARNING_RATE)
  started = time.perf_counter()
  seconds = {"landmarks": 0.0, "design": 0.0}

  if risk == "incomplete":
    b = n if counts["num_pairs"] is None else counts["num_pairs"]
    # Drawing B pairs took about 32 bytes per pair at its peak (1e9 pairs: 32 GB).
    memory.check_allocation(32 * b, f"drawing num_pairs={b} pairs", "Use fewer pairs (the "
                            "paper's B = n is the default), or risk='full' for small n.")
    pairs = pairs_lib.sample_pairs(key_pairs, n_pos, n_neg, b)
  else:
    b = n_pos * n_neg
    pairs = pairs_lib.PairIndices(jnp.zeros((1,), jnp.int32), jnp.zeros((1,), jnp.int32))
  data, feature_map, support = _design(
      kernel, key_design, x, y, pairs, sigma=sigma, num_landmarks=counts["num_landmarks"],
      landmarks=landmarks, kmeans_iters=counts["kmeans_iters"],
      kmeans_sample_size=counts["kmeans_sample_size"], seconds=seconds)

  params = jnp.zeros((data.x_pos.shape[1],), data.x_pos.dtype)
  lam, tol = jnp.float32(lam), jnp.float32(tol)
  jax.block_until_ready(data)
  start = time.perf_counter()
  compiled = train_lib.minimize.lower(objective, params, data, lam, optimizer,
                                      max_steps=counts["max_steps"], tol=tol,
                                      patience=counts["patience"]).compile()   # cached per shape
  compiled_at = time.perf_counter()
  result = jax.block_until_ready(compiled(params, data, lam, tol=tol))
  seconds["design"] += start - started
  seconds.update(compile=compiled_at - start, train=time.perf_counter() - compiled_at)
  value, steps = float(result.value), int(result.num_steps)
  if (not np.isfinite(value) or steps > 1 and value >= float(result.values[0])) and (
      np.isfinite(float(result.values[0]))):
    _refuse_a_lam_too_large(objective, data, float(lam), float(result.values[0]))
  if not np.isfinite(value):
    raise errors.DivergenceError(
        f"the ROC-SVM objective became {value} after {steps} steps "
        f"({_scale_text(x, kernel, sigma)}). Lower the learning rate (or your optimizer's), "
        "min-max scale the features (ROCSVM does by default)"
        + (" or raise lam." if float(lam) < 1.0 else "."))   # a large lam: raising it is no fix
  if steps > 1 and value >= float(result.values[0]):
    # No decrease from beta = 0 although the objective is not flat there: the optimizer
    # stalled (e.g. every line-search trial overflowed); never return beta = 0 as a fit.
    # The largest entry, not the norm: squares of a gradient below 1e-19 underflow float32,
    # and a zero norm would take the stall for a flat objective (tiny features).
    slope = float(jnp.max(jnp.abs(jax.grad(objective)(params, data, lam))))
    if slope > 0:
      cause = ("the gradient overflows float32" if not np.isfinite(slope)
               else f"largest gradient entry {slope:.3g} there")
      raise errors.DivergenceError(
          f"the ROC-SVM optimizer made no progress: the objective stayed at {value} after "
          f"{steps} steps from beta = 0 ({cause}; {_scale_text(x, kernel, sigma)}). Min-max "
          f"scale the features (ROCSVM does by default), {advice}.")

  intercept = 0.0
  if target_sensitivity is not None or target_specificity is not None:
    scores = np.concatenate([np.asarray(data.x_pos @ result.params)[:n_pos],
                             np.asarray(data.x_neg @ result.params)[:n_neg]])
    labels = np.concatenate([np.ones(n_pos), np.zeros(n_neg)])
    rate = "sensitivity" if target_sensitivity is not None else "specificity"
    target = target_sensitivity if target_sensitivity is not None else target_specificity
    intercept = train_lib.intercept_for_rate(scores, labels, target, rate)
  model = RocSvmModel(kernel, result.params, intercept, x.shape[1], sigma, feature_map, support,
                      names)
  return RocSvmFit(model, objective, value, steps, bool(result.converged),
                   np.asarray(result.values)[:steps], b, seconds)


def _largest_decrease(objective, data, lam):
  """An upper bound on how far the objective can fall below its value at beta = 0.

  With u the gradient of the (convex) risk in the scores at 0 and g = the objective's gradient
  there (X^T u, or K u for the kernel model, whose penalty is theta^T K theta), convexity gives
  F(beta) >= F(0) + u.s(beta) + lam / 2 pen(beta) >= F(0) - u.g / (2 lam): ||g||^2 / (2 lam)
  for the ridge penalty. inf for lam = 0.
  """
  if lam <= 0:
    return np.inf
  s_pos, s_neg = jnp.zeros(data.x_pos.shape[0]), jnp.zeros(data.x_neg.shape[0])
  u_pos, u_neg = jax.grad(lambda a, b: objective.risk_of_scores(a, b, data), (0, 1))(s_pos, s_neg)
  u = np.concatenate([np.asarray(u_pos, np.float64), np.asarray(u_neg, np.float64)])
  x_pos, x_neg = np.asarray(data.x_pos, np.float64), np.asarray(data.x_neg, np.float64)
  g = x_pos.T @ u[:x_pos.shape[0]] + x_neg.T @ u[x_pos.shape[0]:]   # the gradient, in float64
  if objective.model == "linear":
    return float(g @ g) / (2.0 * lam)
  return float(u @ g) / (2.0 * lam)


def _refuse_a_lam_too_large(objective, data, lam, start_value):
  """``DivergenceError`` naming lam where it is the cause of a stalled or NaN training: the
  convexity bound on the objective's decrease from beta = 0 is below float32's resolution of
  the objective there, but would not be at the default lam = 1e-3 (else the features' scale is
  the cause, which the caller's messages say)."""
  resolution = 2 * np.finfo(np.float32).eps * abs(start_value)
  decrease = _largest_decrease(objective, data, lam)
  if 0 < decrease <= resolution < decrease * lam / 1e-3:
    raise errors.DivergenceError(
        f"lam={lam:g} is too large for these data: the objective can fall at most "
        f"{decrease:.3g} below its value {start_value:.4g} at beta = 0 (convexity bound), under "
        "float32's resolution, so training stays at beta = 0 and every score ties. Lower lam "
        "(the default is 1e-3).")


_FIT_DEFAULTS = {name: p.default for name, p in inspect.signature(fit).parameters.items()}


def _scale_text(x, kernel, sigma):
  """The data scale a failed fit reports: the features' range (and sigma for kernel models)."""
  text = f"features in [{float(np.min(x)):.3g}, {float(np.max(x)):.3g}]"
  return text if kernel == "linear" else f"{text}, sigma={sigma:.3g}"


def decision_function(model: RocSvmModel, x, chunk_size=8192, *, units=None):
  """Scores f(x) = alpha + ... of a fitted model (NumPy float32 [n]), checking ``x`` first.

  Kernel models warn (``UnscaledFeaturesWarning``) for rows beyond the kernel's reach of their
  landmarks or support points.

  Args:
    model: ``RocSvmModel`` (``fit(...).model``).
    x: [n, p] points preprocessed like the training data.
    chunk_size: test points per kernel block of the exact kernel model.
    units: optional (offset [p], scale [p]) of an input map: the warning quotes a value v as
      offset + v * scale (``ROCSVM`` passes its min-max map, so that it reads in X's units).

  Returns:
    [n] scores; ``scores > 0`` predicts the positive class.
  """
  x = validation.check_points("x", x, dim=model.num_features, columns=model.feature_names)
  validation.check_kernel_scale("x", x)
  chunk_size = validation.check_count("chunk_size", chunk_size)
  if model.kernel != "linear":   # rows far from every landmark / support point weighted: warned
    points = (model.feature_map.landmarks if model.kernel == "nystrom"
              else np.asarray(model.support)[np.asarray(model.coef) != 0])
    validation.warn_if_out_of_reach(
        points, model.sigma, x, "x" if units is None else "X", units,
        of="the landmarks" if model.kernel == "nystrom" else "the weighted training points")
  if model.kernel == "linear":
    scores = np.asarray(x @ np.asarray(model.coef))
  elif model.kernel == "nystrom":
    scores = np.asarray(nystrom_lib.nystrom_features(model.feature_map, x)) @ np.asarray(model.coef)
  else:
    scores = np.concatenate([
        np.asarray(_kernel_scores(x[i:i + chunk_size], model.support, model.coef, model.sigma))
        for i in range(0, x.shape[0], chunk_size)])
  return (scores + model.intercept).astype(np.float32)


def model_auc(model: RocSvmModel, x, y):
  """AUC (``qsg_jax.binary_auc``, ties 1/2) of a fitted model's scores on (x, y), as a float.

  Args:
    model: ``RocSvmModel``.
    x: [n, p] points preprocessed like the training data.
    y: [n] labels, positive where > 0; both classes present.

  Returns:
    The AUC in [0, 1].
  """
  y = check_binary_labels(y, np.asarray(x).shape[0])
  return float(_binary_auc(decision_function(model, x), y))
