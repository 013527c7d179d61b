"""Fitting and scoring exact kernel-expansion AUC models, one binary model per ordinal split.

A fitted model is f_j(x) = sum_i alpha_{j,i} k_j(z_i, x) over every training point z_i (labeled
first, then unlabeled), k_j(x, z) = exp(-sigma_j ||x - z||^2), for the k-1 splits j (negatives:
classes 0..j, positives: classes j+1..k-1; a binary problem has the one split {0} vs {1}). Each
split is an independent binary problem solved in closed form by ``pairwise_risk``; SAMULT and
PNU-AUC plug in their pair coefficients. Splits are solved one after the other inside one jitted
call, so memory is that of one split: about 4 n^2 numbers (kernel, system, LU factors, a copy),
which ``check_kernel_memory`` compares with free memory before anything is allocated. A *shared*
fit (``exact_qsg``) instead solves for one function f that minimizes the mean of the split risks
(QS3ORAO's objective) in one solve of the same size: alpha then has one row.

When no split gives the unlabeled points any weight (SAMULT gamma = 1, PNU-AUC eta = 0: the
supervised end), their rows of the system (L K + lam/2 I) alpha = r - c read lam/2 alpha_u = 0, so
their coefficients are exactly zero and the labeled rows form the same system on the labeled points
alone. The fit then solves that n_l x n_l system and keeps only the labeled points as centers: the
same function, at the cost (time and memory) of the labeled points.
"""

import functools
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax.engine import kernels
from qsg_jax import memory
from qsg_jax import _validation as validation
from qsg_jax import numerics
from qsg_jax.baselines import pairwise_risk

# Bytes of one kernel block while scoring: chunks of x are sized to keep [chunk, n] under this.
SCORE_BLOCK_BYTES = 2**27
# n x n arrays alive at once while one split is solved: kernel, system matrix, LU factors and a
# layout copy for LAPACK (measured peak: 3.5 n^2 float32 at n = 8200).
MATRICES_PER_SOLVE = 4


class KernelAUCModel(NamedTuple):
  """An exact kernel AUC model (SAMULT, PNU-AUC, their multi-class versions, exact QSG)."""
  method: str             # "samult", "pnu_auc", "m_samult", "m_pnu_auc" or "exact_qsg".
  centers: jax.Array      # [n, d] expansion points: labeled, then unlabeled training points
                          # (labeled only when no split weights the unlabeled points).
  alpha: jax.Array        # [k-1, n] coefficients of the k-1 split models ([1, n]: shared f).
  sigma: np.ndarray       # [k-1] Gaussian kernel parameter of each split model ([1]: shared).
  lam: np.ndarray         # [k-1] regularization of each split model ([1]: shared).
  gamma: np.ndarray       # [k-1] trade-off of each split model (method's own convention).
  prior: Optional[np.ndarray]  # [k-1] positive class prior per split (PNU-AUC), else None.
  num_classes: int        # k.
  binary: bool            # True: one model, decision_function returns [m]; False: [m, k-1].
  feature_names: Optional[tuple] = None  # x_labeled's column names when it was a data frame:
                          # a frame scored must have them, in order.


def required_bytes(num_points, itemsize=4):
  """Peak bytes of fitting one split on ``num_points`` points (MATRICES_PER_SOLVE n x n arrays).

  Args:
    num_points: n, a whole number >= 0.
    itemsize: bytes per number, a whole number >= 1 (4 for float32, 8 for float64).
  """
  num_points = validation.check_count("num_points", num_points, minimum=0, maximum=None)
  itemsize = validation.check_count("itemsize", itemsize, fix="Pass 4 (float32) or 8 (float64).")
  return MATRICES_PER_SOLVE * num_points ** 2 * itemsize


def check_kernel_memory(method, num_labeled, num_unlabeled, itemsize=4, fraction=0.8):
  """Refuses (``InsufficientMemoryError``) a fit whose n x n arrays would not fit in memory.

  Args:
    method: method name for the message.
    num_labeled: n_l.
    num_unlabeled: n_u.
    itemsize: bytes per number (4 for float32).
    fraction: share of free memory the fit may take.
  """
  num_labeled = validation.check_count("num_labeled", num_labeled, minimum=0, maximum=None)
  num_unlabeled = validation.check_count("num_unlabeled", num_unlabeled, minimum=0, maximum=None)
  n = num_labeled + num_unlabeled
  fraction = check_memory_fraction(fraction)
  memory.check_allocation(
      required_bytes(n, itemsize),
      what=(f"{method} with n = {n} training points ({num_labeled} labeled + {num_unlabeled} "
            f"unlabeled) holds {MATRICES_PER_SOLVE} n x n matrices (kernel, system, LU factors, "
            "copy) and"),
      fix=("Subsample x_unlabeled (memory grows as n^2), use float32, or use the scalable "
           "qsg_jax.fit (QSG-S2AUC / QS3ORAO), whose memory does not grow with n."),
      fraction=fraction)


def check_memory_fraction(fraction):
  """``fraction`` (share of free memory a fit may take) as a float in (0, 1], else an error."""
  return validation.check_positive(
      "memory_fraction", fraction, at_most=1.0, fix="Pass e.g. memory_fraction=0.8.",
      what="a number in (0, 1] (the share of free memory a fit may take)")


def per_split(name, value, num_splits, low, high, closed_low=True, closed_high=True, fix=""):
  """Broadcasts a scalar or [k-1] hyper-parameter to a float [k-1] array inside its range
  (low, high: bounds; closed_low / closed_high: whether they are allowed; fix: the advice of
  the range error)."""
  if isinstance(value, (bool, np.bool_)):
    raise TypeError(f"{name} must be a number or a list of k-1 = {num_splits} numbers; "
                    f"received {value!r:.60}.")
  arr = _numbers(name, value, f"a number or a list of k-1 = {num_splits} numbers")
  if arr.ndim == 0:
    arr = np.full(num_splits, float(arr))
  if arr.shape != (num_splits,):
    raise ValueError(f"{name} must be a scalar or have shape [k-1] = [{num_splits}]; received "
                     f"shape {arr.shape}.")
  _check_range(name, arr, low, high, closed_low, closed_high, fix)
  return arr


def interval(low, high, closed_low=True, closed_high=True):
  """The text of a range, e.g. "(0, 1)" or "[-1, 1]" (messages)."""
  closed_high = closed_high and np.isfinite(high)   # inf itself is never allowed
  return f"{'[' if closed_low else '('}{low:g}, {high:g}{']' if closed_high else ')'}"


def check_coefficient_argument(name, value, low, high, closed_low=True, closed_high=True,
                               fix=""):
  """Refuses a concrete ``value`` (scalar or array) of a pair-coefficient function outside its
  range (``ValueError``) or not a number (``TypeError``); tracers pass (values unknown under
  jit / vmap, where the fits have checked them already)."""
  if validation.is_traced(value):
    return
  arr = _numbers(name, value, f"a number in {interval(low, high, closed_low, closed_high)}")
  _check_range(name, arr, low, high, closed_low, closed_high, fix)


def _numbers(name, value, want):
  """``value`` as a float64 array, or a ``TypeError`` saying it must be ``want``."""
  if value is None or isinstance(value, (str, bytes)):
    raise TypeError(f"{name} must be {want}; received {value!r:.60}.")
  try:
    return np.asarray(value, np.float64)
  except (TypeError, ValueError):
    raise TypeError(f"{name} must be {want}; received {type(value).__name__} "
                    f"{value!r:.60}.") from None


def _check_range(name, arr, low, high, closed_low, closed_high, fix):
  """``ValueError`` unless every entry of ``arr`` is finite and inside the range."""
  above_low = arr >= low if closed_low else arr > low
  below_high = arr <= high if closed_high else arr < high
  if not np.all(np.isfinite(arr) & above_low & below_high):
    raise ValueError(f"{name} must lie in {interval(low, high, closed_low, closed_high)}; "
                     f"received {validation.summarize(np.ravel(arr).tolist())}. {fix}".rstrip())


def check_dtype(dtype):
  """Returns ``dtype`` checked: float32, or float64 when JAX has 64-bit types enabled."""
  try:
    dtype = jnp.dtype(dtype)
  except TypeError:
    raise TypeError(f"dtype must be float32 or float64; received {dtype!r:.60}.") from None
  if dtype not in (jnp.float32, jnp.float64):
    raise TypeError(f"dtype must be float32 or float64; received {dtype}.")
  if dtype == jnp.float64 and not jax.config.jax_enable_x64:
    raise ValueError("dtype float64 needs 64-bit JAX: call jax.config.update('jax_enable_x64', "
                     "True) first (or use the jax.enable_x64(True) context), or use float32.")
  return dtype


@functools.partial(jax.jit, static_argnames="dtype")
def _group_weights(positive, negative, unlabeled, dtype):
  weights = functools.partial(pairwise_risk.group_weights, dtype=dtype)
  return jax.vmap(weights, in_axes=(0, 0, None))(positive, negative, unlabeled)


def split_groups(y_labeled, num_classes, num_unlabeled, dtype):
  """Group weights of every split: [k-1, n, 3] (positive: y > j, negative: y <= j, unlabeled)."""
  n_l = y_labeled.shape[0]
  splits = np.arange(num_classes - 1)[:, None]
  pad = np.zeros((num_classes - 1, num_unlabeled), bool)
  positive = np.concatenate([y_labeled[None, :] > splits, pad], axis=1)
  negative = np.concatenate([y_labeled[None, :] <= splits, pad], axis=1)
  unlabeled = np.concatenate([np.zeros(n_l, bool), np.ones(num_unlabeled, bool)])
  return _group_weights(positive, negative, unlabeled, jnp.dtype(dtype))


@functools.partial(jax.jit, static_argnums=0)
def split_coefficients(coefficient_fn, gamma, prior):
  """(coef [k-1, 3, 3], const [k-1]) of every split from [k-1] gammas and priors."""
  return jax.vmap(coefficient_fn)(gamma, prior)


@jax.jit
@numerics.full_precision
def _solve_splits(centers, group_w, coef, lam, sigma):
  """[k-1, n] coefficients: for each split, its kernel matrix and one LU solve, in sequence."""
  def one_split(args):
    g, c, l, s = args
    kernel = kernels.gaussian_kernel(centers, centers, s)
    return pairwise_risk.solve_coefficients(kernel, g, c, l)
  return jax.lax.map(one_split, (group_w, coef, lam, sigma))


@jax.jit
@jax.default_matmul_precision("highest")
def _solve_shared(centers, group_w, coef, lam, sigma):
  """[1, n] coefficients of the one f minimizing the mean of the split risks (one LU solve)."""
  kernel = kernels.gaussian_kernel(centers, centers, sigma[0])
  matrix, rhs = pairwise_risk.mean_stationary_system(kernel, group_w, coef, lam[0])
  return jnp.linalg.solve(matrix, rhs)[None]


def unlabeled_weightless(coef):
  """Whether no pair involving the unlabeled group has weight in any split's [3, 3] coefficients."""
  coef = np.asarray(coef)
  return bool(np.all(coef[:, pairwise_risk.UNLABELED, :] == 0)
              and np.all(coef[:, :, pairwise_risk.UNLABELED] == 0))


def fit_splits(method, coefficient_fn: Callable, x_labeled, y_labeled, x_unlabeled, *, lam,
               sigma, gamma, gamma_range, prior=None, num_classes=None, binary, dtype,
               memory_fraction, unlabeled_unused_at, shared=False):
  """Validates the data, checks memory and solves every split; the shared body of all fits.

  Args:
    method: name stored in the model and used in messages.
    coefficient_fn: (gamma, prior) -> (coef [3, 3], const), the method's risk.
    x_labeled: [n_l, d] labeled points.
    y_labeled: [n_l] int labels 0..k-1, every class present.
    x_unlabeled: [n_u, d] unlabeled points, or None.
    lam: scalar or [k-1] lambda > 0.
    sigma: scalar or [k-1] kernel parameter > 0.
    gamma: scalar or [k-1] trade-off in ``gamma_range``.
    gamma_range: (low, high) allowed gamma.
    prior: [k-1] class priors (PNU-AUC) or None.
    num_classes: k, or None to infer (binary fits pass 2).
    binary: whether decision_function returns [n] instead of [n, k-1].
    dtype: float32 or float64.
    memory_fraction: share of free memory the fit may take.
    unlabeled_unused_at: the gamma at which unlabeled data gets no weight (for the message when
      none is given).
    shared: fit one function for all splits (mean of their risks; lam and sigma scalars) instead
      of one per split; the model then scores [m].

  Returns:
    ``KernelAUCModel``.
  """
  dtype = check_dtype(dtype)
  x_l = validation.check_points("x_labeled", x_labeled, dtype=dtype)
  y_l, k = validation.check_labels(y_labeled, x_l.shape[0], num_classes)
  if shared and (np.ndim(lam) or np.ndim(sigma)):
    raise ValueError(f"{method} fits one function for every split, so lam and sigma must be "
                     f"scalars; received shapes {np.shape(lam)} and {np.shape(sigma)}.")
  num_models = 1 if shared else k - 1
  lam = per_split("lam", lam, num_models, 0.0, np.inf, closed_low=False)
  sigma = per_split("sigma", sigma, num_models, 0.0, np.inf, closed_low=False)
  gamma = per_split("gamma", gamma, k - 1, *gamma_range)
  prior_arg = np.zeros(k - 1) if prior is None else prior
  coef, _ = split_coefficients(coefficient_fn, jnp.asarray(gamma, dtype),
                               jnp.asarray(prior_arg, dtype))
  weightless = unlabeled_weightless(coef)
  if x_unlabeled is None or np.asarray(x_unlabeled).size == 0:
    if not weightless:
      raise ValueError(
          f"no unlabeled data but {method} gamma={gamma.tolist()} gives weight to unlabeled "
          f"pairs: pass x_unlabeled, or set gamma={unlabeled_unused_at} for supervised training.")
    x_u = np.zeros((0, x_l.shape[1]), dtype)
  else:
    x_u = validation.check_points("x_unlabeled", x_unlabeled, dim=x_l.shape[1], dtype=dtype,
                                  columns=validation.column_names(x_labeled))
    if weightless:   # their coefficients would be exactly 0 (module docstring)
      x_u = x_u[:0]
  check_kernel_memory(method, x_l.shape[0], x_u.shape[0], dtype.itemsize, memory_fraction)
  validation.check_kernel_scale("x_labeled and x_unlabeled", np.concatenate([x_l, x_u]), sigma,
                                dtype)
  centers = jnp.asarray(np.concatenate([x_l, x_u]), dtype)
  group_w = split_groups(y_l, k, x_u.shape[0], dtype)
  solve = _solve_shared if shared else _solve_splits
  alpha = solve(centers, group_w, coef, jnp.asarray(lam, dtype), jnp.asarray(sigma, dtype))
  bad = ~np.all(np.isfinite(np.asarray(alpha)), axis=1)
  if bad.any():
    raise FloatingPointError(
        f"{method}: the linear system of model(s) {np.nonzero(bad)[0].tolist()} gave non-finite "
        f"coefficients (lam={lam.tolist()}, sigma={sigma.tolist()}): it is singular to working "
        "precision. Increase lam, remove duplicate points, or use dtype=float64.")
  return KernelAUCModel(method, centers, alpha, sigma, lam, gamma, prior, k, binary,
                        validation.column_names(x_labeled))


@functools.partial(jax.jit, static_argnames="shared_sigma")
@jax.default_matmul_precision("highest")
def _score_chunk(x, centers, alpha, sigma, shared_sigma):
  """[chunk, k-1] scores; one kernel block when every split uses the same sigma."""
  if shared_sigma:
    return kernels.gaussian_kernel(x, centers, sigma[0]) @ alpha.T
  per_split_scores = jax.lax.map(
      lambda args: kernels.gaussian_kernel(x, centers, args[1]) @ args[0], (alpha, sigma))
  return per_split_scores.T


def decision_function(model: KernelAUCModel, x, chunk_size=None):
  """Scores f_j(x) of a fitted model, computed over chunks of x so memory stays bounded.

  Args:
    model: ``KernelAUCModel``.
    x: [m, d] points preprocessed like the training data.
    chunk_size: rows of x per kernel block (a whole number >= 1); default (None) keeps a block
      near 128 MiB.

  Returns:
    NumPy [m] scores for a binary model, [m, k-1] (column j: model of split j) otherwise.
  """
  n, d = model.centers.shape
  dtype = model.centers.dtype
  if dtype == jnp.float64 and not jax.config.jax_enable_x64:
    raise ValueError("this model was fitted with dtype float64, which needs 64-bit JAX to score "
                     "(without it JAX would compute in float32): call jax.config.update("
                     "'jax_enable_x64', True) first, or score inside jax.enable_x64(True).")
  x = validation.check_points("x", x, dim=d, allow_empty=True, dtype=dtype,
                              columns=model.feature_names)
  validation.check_kernel_scale("x", x, dtype=dtype)
  validation.warn_if_out_of_reach(model.centers, model.sigma, x)
  m = x.shape[0]
  itemsize = model.centers.dtype.itemsize
  chunk_size = validation.check_count("chunk_size", chunk_size, allow_none=True)
  if chunk_size is None:
    chunk_size = 2 ** int(np.log2(max(1, SCORE_BLOCK_BYTES // (2 * n * itemsize))))
  chunk_size = max(1, min(chunk_size, max(m, 1)))
  num_chunks = -(-m // chunk_size)
  padded = np.zeros((num_chunks * chunk_size, d), dtype)
  padded[:m] = x
  sigma = jnp.asarray(model.sigma, model.centers.dtype)
  shared = bool(np.all(model.sigma == model.sigma[0]))
  blocks = [np.asarray(_score_chunk(jnp.asarray(padded[i * chunk_size:(i + 1) * chunk_size],
                                                model.centers.dtype),
                                    model.centers, model.alpha, sigma, shared))
            for i in range(num_chunks)]
  k1 = model.alpha.shape[0]
  scores = np.concatenate(blocks)[:m] if blocks else np.zeros((0, k1), dtype)
  return scores[:, 0] if model.binary else scores
