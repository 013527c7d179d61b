"""One step of online pairwise least squares (Eq. 1): a literal form and an exact O(d^2) form.

Algorithm (1) of Boissier, Lyu, Ying and Zhou: w_1 = w_2 = 0 and, for t >= 2,

    w_{t+1} = w_t - gamma_t / (t-1) sum_{j<t} (w_t^T (x_t - x_j) - y_t + y_j) (x_t - x_j),

whose bracket is the gradient of the local empirical error 1/(2(t-1)) sum_{j<t} (...)^2.

* Literal form (``init_literal``/``update_literal``): every earlier example is kept in a buffer of
  fixed capacity (so that the step has a static shape and scans) and the sum is taken over it:
  O(t d) work per step (O(capacity d) in practice, the unused rows being masked).
* Incremental form (``init``/``update``): with n = t - 1, the means xbar, ybar of the earlier
  examples and their centered second moments Sxx = 1/n sum_j (x_j - xbar)(x_j - xbar)^T and
  sxy = 1/n sum_j (y_j - ybar)(x_j - xbar), the sum expands exactly into

      1/n sum_j (w^T (x_t - x_j) - y_t + y_j)(x_t - x_j)
          = (x_t - xbar) ((x_t - xbar)^T w - (y_t - ybar)) + Sxx w - sxy,

  O(d^2) per step. (xbar, ybar, Sxx, sxy) carry the same information as the running sums of x, y,
  x x^T and y x; they are kept as means and centered moments (Welford's update) so that float32
  does not lose the differences x_t - x_j to cancellation after 10^6 examples.

Both ``update`` functions are pure, written for one example, and usable as a ``lax.scan`` body (see
``qsg_jax.online_pairwise.run``). Step sizes are callables of the paper's t (the index of the
arriving example, t = 2 for the first update); ``PolynomialStepSize`` is Theorem 1's
gamma_t = t^-theta / mu.
"""

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax import numerics


class PolynomialStepSize(NamedTuple):
  """gamma_t = t^-theta / mu (Theorem 1); hashable, so jit caches on its values."""
  theta: float  # decay exponent; Theorem 1 needs 1/2 < theta < 1.
  mu: float     # scale; Theorem 1 needs mu >= lambda_rho + kappa^2 (see ``estimate_mu``).

  def __call__(self, t):
    return jnp.asarray(t).astype(jnp.result_type(float)) ** (-self.theta) / self.mu


def check_real(name, value, expected):
  """``value`` as a float after refusing what is not a real number (str, None, bool, arrays)."""
  dtype = np.asarray(value).dtype if np.ndim(value) == 0 else None
  if (isinstance(value, (bool, np.bool_)) or dtype is None or not np.issubdtype(dtype, np.number)
      or np.issubdtype(dtype, np.complexfloating)):
    raise TypeError(f"{name} must be {expected}; received {value!r:.40} of type "
                    f"{type(value).__name__}.")
  return float(value)


def polynomial_step_size(theta, mu):
  """Theorem 1's schedule gamma_t = t^-theta / mu, checked.

  Args:
    theta: exponent in (0, 1]; the rate of Theorem 1 holds for 1/2 < theta < 1.
    mu: positive scale, e.g. ``estimate_mu(x)`` or the population lambda_rho + kappa^2.

  Returns:
    A ``PolynomialStepSize``, callable on the step index t.

  Raises:
    TypeError: theta or mu is not a real number (a string, None, bool).
    ValueError: theta outside (0, 1], mu not positive and finite.
  """
  theta = check_real("theta", theta, "a number in (0, 1], e.g. theta=0.75")
  mu = check_real("mu", mu, "a positive number, e.g. mu=estimate_mu(x)")
  if not 0.0 < theta <= 1.0:
    raise ValueError(f"theta must be in (0, 1] (Theorem 1 covers 1/2 < theta < 1); received "
                     f"theta={theta}.")
  if not (np.isfinite(mu) and mu > 0.0):
    raise ValueError(f"mu must be a positive finite number (Theorem 1: mu >= lambda_rho + "
                     f"kappa^2); received mu={mu}. Use estimate_mu(x) on a sample of the data.")
  return PolynomialStepSize(theta, mu)


def estimate_mu(x, rtol=1e-8):
  """lambda_rho + kappa^2 of Theorem 1 estimated on a sample of points.

  lambda_rho is the smallest positive eigenvalue of C_rho = E (x - x')(x - x')^T = 2 Cov(x) and
  kappa = sup ||x - x'||; both are taken on the sample (kappa exactly over its O(n^2) pairs), so
  the result is a lower estimate of the population value. Time O(n^2 d), memory bounded (blocks
  of about 4 million pairs): a few thousand points are plenty (``fit_stream`` uses at most the
  first 2048 examples).

  Args:
    x: [n, d] sample, n >= 2.
    rtol: eigenvalues below rtol * largest count as zero (the null space V_0).

  Returns:
    Python float mu.
  """
  validation.refuse_unreadable("x", x)
  arr = validation.as_numbers(x)   # pandas nullable numbers: NA becomes NaN (refused below)
  if arr.dtype != bool and (not np.issubdtype(arr.dtype, np.number)
                            or np.issubdtype(arr.dtype, np.complexfloating)):
    raise TypeError(f"estimate_mu's x must be real numbers; received dtype {arr.dtype}. Pass "
                    "the real features (complex ones: np.c_[x.real, x.imag]).")
  x = arr.astype(np.float64)
  if x.ndim != 2 or x.shape[0] < 2:
    raise ValueError(f"estimate_mu needs a sample of shape [n, d] with n >= 2; received shape "
                     f"{x.shape}.")
  if np.ndim(rtol):
    raise ValueError(f"estimate_mu's rtol must be a number in [0, 1) (a relative eigenvalue "
                     f"cut-off); received an array of shape {np.shape(rtol)}. estimate_mu takes "
                     "the features only.")
  rtol = check_real("rtol", rtol, "a number in [0, 1) (a relative eigenvalue cut-off), e.g. "
                     "rtol=1e-8")
  if not 0 <= rtol < 1:
    raise ValueError(f"estimate_mu's rtol must be a number in [0, 1) (a relative eigenvalue "
                     f"cut-off); received {rtol!r:.40}. estimate_mu takes the features only.")
  bad = ~np.isfinite(x).all(axis=1)
  if bad.any():
    raise ValueError(f"estimate_mu: the sample has {int(bad.sum())} rows with NaN or infinite "
                     f"values (first at row {int(np.argmax(bad))}); drop or impute them first.")
  scale = float(np.max(np.abs(x)))
  x = x / scale if scale > 0 else x      # mu(x) = scale^2 mu(x / scale): no under/overflow
  eig = np.linalg.eigvalsh(2.0 * np.cov(x, rowvar=False).reshape(x.shape[1], x.shape[1]))
  positive = eig[eig > rtol * max(eig.max(), 0.0)]
  if positive.size == 0:
    raise ValueError("every point of the sample is the same: C_rho = 0 and nothing can be "
                     "learned. Pass a sample with distinct points.")
  sq = np.sum(x * x, axis=1)
  kappa2 = 0.0
  rows = max(1, 2**22 // x.shape[0])        # exact max over all pairs in [rows, n] blocks
  for start in range(0, x.shape[0], rows):
    block = x[start:start + rows]
    dist2 = sq[start:start + rows, None] + sq[None, :] - 2.0 * (block @ x.T)
    kappa2 = max(kappa2, float(dist2.max()))
  with np.errstate(over="ignore", under="ignore"):
    mu = scale * scale * (float(positive.min()) + kappa2)
  if not (np.isfinite(mu) and mu > 0):
    raise ValueError(f"estimate_mu: the features reach |x| = {scale:.3g}, so mu (their squared "
                     f"spread) is {mu:.3g}, outside float64. Rescale the features (min-max to "
                     "[0, 1], qsg_jax.data.minmax_fit).")
  return mu


class IncrementalState(NamedTuple):
  """State of the O(d^2) form after ``step`` examples (n = step, the next example is t = n + 1)."""
  step: jax.Array     # int32 scalar, examples seen so far.
  w: jax.Array        # [d] float, the iterate w_{step+1}.
  mean_x: jax.Array   # [d] float, xbar = 1/n sum_j x_j (zero while n = 0).
  mean_y: jax.Array   # float scalar, ybar = 1/n sum_j y_j.
  cov_xx: jax.Array   # [d, d] float, 1/n sum_j (x_j - xbar)(x_j - xbar)^T.
  cov_yx: jax.Array   # [d] float, 1/n sum_j (y_j - ybar)(x_j - xbar).


class LiteralState(NamedTuple):
  """State of the literal form: the iterate and every example seen so far."""
  step: jax.Array     # int32 scalar, examples seen so far (rows of the buffer in use).
  w: jax.Array        # [d] float, the iterate w_{step+1}.
  x_seen: jax.Array   # [capacity, d] float, x_1..x_step then zeros.
  y_seen: jax.Array   # [capacity] float, y_1..y_step then zeros.


def _check_dim(dim):
  if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
    raise ValueError(f"dim must be a positive integer (the number of features d); received "
                     f"{dim!r}.")
  return int(dim)


def check_float_dtype(dtype):
  """``dtype`` as a NumPy dtype after checking it is float32 or float64 and JAX can use it now.

  Half precision (float16, bfloat16) is refused: the running moments divide by the example count,
  which float16 holds exactly only up to 2048 (and not at all past 65504) and bfloat16 up to 256,
  so any longer stream would be averaged with a wrong count without a word.
  """
  try:
    dtype = jnp.dtype(dtype)
  except TypeError:
    raise TypeError(f"dtype must be a float dtype (jnp.float32, or jnp.float64 with 64-bit JAX); "
                    f"received {dtype!r:.40}.") from None
  if not jnp.issubdtype(dtype, jnp.floating):
    raise TypeError(f"dtype must be a float dtype; received {dtype}.")
  if dtype.itemsize < 4:
    raise ValueError(f"dtype must be float32 or float64; received {dtype}: the running moments "
                     f"divide by the example count, which {dtype} holds exactly only up to "
                     f"{2 ** (jnp.finfo(dtype).nmant + 1)}, so longer streams would be averaged "
                     "wrongly. Use dtype=jnp.float32 (the default).")
  if jax.dtypes.canonicalize_dtype(dtype) != dtype:
    raise ValueError(f"dtype {dtype} needs 64-bit JAX: run under jax.enable_x64(True) or set "
                     "jax_enable_x64, or use float32.")
  return dtype


def init(dim, dtype=jnp.float32) -> IncrementalState:
  """Initial incremental state: w_1 = 0, no examples seen.

  Args:
    dim: number of features d.
    dtype: float dtype of the state (float64 needs ``jax_enable_x64``).

  Returns:
    ``IncrementalState``.
  """
  dim, dtype = _check_dim(dim), check_float_dtype(dtype)
  zeros = lambda *shape: jnp.zeros(shape, dtype)
  return IncrementalState(step=jnp.zeros((), jnp.int32), w=zeros(dim), mean_x=zeros(dim),
                          mean_y=zeros(), cov_xx=zeros(dim, dim), cov_yx=zeros(dim))


def init_literal(dim, capacity, dtype=jnp.float32) -> LiteralState:
  """Initial literal state with room for ``capacity`` examples.

  Args:
    dim: number of features d.
    capacity: the most examples the state can take (the stream length T).
    dtype: float dtype of the state.

  Returns:
    ``LiteralState``.
  """
  dim, dtype = _check_dim(dim), check_float_dtype(dtype)
  if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 1:
    raise ValueError(f"capacity must be a positive integer (the number of examples the literal "
                     f"form can store); received {capacity!r}.")
  return LiteralState(step=jnp.zeros((), jnp.int32), w=jnp.zeros(dim, dtype),
                      x_seen=jnp.zeros((capacity, dim), dtype),
                      y_seen=jnp.zeros(capacity, dtype))


def _as_example(w, x_t, y_t):
  """Casts one example to the state's dtype after checking its shapes (at trace time)."""
  x_t, y_t = jnp.asarray(x_t), jnp.asarray(y_t)
  if x_t.shape != w.shape:
    raise ValueError(f"x_t must be one example of shape {w.shape}; received shape {x_t.shape}. "
                     "Scan over the rows of an [n, d] array (qsg_jax.online_pairwise.run).")
  if y_t.shape != ():
    raise ValueError(f"y_t must be a scalar; received shape {y_t.shape}.")
  return x_t.astype(w.dtype), y_t.astype(w.dtype)


def step_size_at(step_size: Callable, t, dtype):
  """gamma_t as the update uses it: ``step_size`` called on the count t, cast to ``dtype``."""
  if not callable(step_size):
    raise TypeError(f"step_size must be a callable of the step index t (e.g. "
                    f"polynomial_step_size(theta, mu) or an optax schedule); received "
                    f"{type(step_size).__name__} {step_size!r}.")
  # The count has the width of the state's floats, so that schedules computing in the count's
  # precision (optax's do) give float64 step sizes for float64 states.
  t = t.astype(jnp.int64 if jnp.dtype(dtype).itemsize == 8 else jnp.int32)
  return jnp.asarray(step_size(t)).astype(dtype)


@numerics.full_precision
def gradient(state: IncrementalState, x_t, y_t):
  """The bracket of Eq. (1) from the running moments, O(d^2); zero before any example is seen.

  Args:
    state: ``IncrementalState`` holding x_1..x_{t-1} (n = t - 1 = state.step).
    x_t: [d] arriving example.
    y_t: scalar label.

  Returns:
    [d] gradient 1/n sum_j (w^T (x_t - x_j) - y_t + y_j)(x_t - x_j) at w = state.w.
  """
  x_t, y_t = _as_example(state.w, x_t, y_t)
  dx = x_t - state.mean_x
  grad = dx * (dx @ state.w - (y_t - state.mean_y)) + state.cov_xx @ state.w - state.cov_yx
  return jnp.where(state.step >= 1, grad, 0.0)


@jax.default_matmul_precision("highest")
def update(state: IncrementalState, x_t, y_t, step_size: Callable) -> IncrementalState:
  """One step of Eq. (1) in O(d^2), exactly equal to ``update_literal``.

  Args:
    state: ``IncrementalState`` after t - 1 examples.
    x_t: [d] example t.
    y_t: scalar label of example t.
    step_size: callable t -> gamma_t (``polynomial_step_size`` or an optax schedule); it is
      called with the paper's index t = state.step + 1 and unused at t = 1.

  Returns:
    ``IncrementalState`` after t examples, holding w_{t+1}.
  """
  x_t, y_t = _as_example(state.w, x_t, y_t)
  dtype = state.w.dtype
  gamma = step_size_at(step_size, state.step + 1, dtype)
  w = jnp.where(state.step >= 1, state.w - gamma * gradient(state, x_t, y_t), state.w)
  # Welford: n' = n + 1, xbar' = xbar + dx / n', S' = S + (n / n' dx dx^T - S) / n'.
  count = (state.step + 1).astype(dtype)
  shrink = state.step.astype(dtype) / count
  dx = x_t - state.mean_x
  dy = y_t - state.mean_y
  return IncrementalState(
      step=state.step + 1,
      w=w,
      mean_x=state.mean_x + dx / count,
      mean_y=state.mean_y + dy / count,
      cov_xx=state.cov_xx + (shrink * jnp.outer(dx, dx) - state.cov_xx) / count,
      cov_yx=state.cov_yx + (shrink * dy * dx - state.cov_yx) / count)


@jax.default_matmul_precision("highest")
def literal_gradient(state: LiteralState, x_t, y_t):
  """The bracket of Eq. (1) summed over the stored examples, O(capacity d).

  Args:
    state: ``LiteralState`` holding x_1..x_{t-1}.
    x_t: [d] arriving example.
    y_t: scalar label.

  Returns:
    [d] gradient 1/(t-1) sum_{j<t} (w^T (x_t - x_j) - y_t + y_j)(x_t - x_j); zero when t = 1.
  """
  x_t, y_t = _as_example(state.w, x_t, y_t)
  seen = jnp.arange(state.x_seen.shape[0]) < state.step        # [capacity]
  # r_j = w^T (x_t - x_j) - y_t + y_j, then sum_j r_j (x_t - x_j) = (sum_j r_j) x_t - r^T X:
  # the same sum without materializing the [capacity, d] differences.
  residual = x_t @ state.w - state.x_seen @ state.w - y_t + state.y_seen     # [capacity]
  residual = jnp.where(seen, residual, 0.0)
  grad = jnp.sum(residual) * x_t - residual @ state.x_seen
  return grad / jnp.maximum(state.step, 1).astype(state.w.dtype)


@jax.default_matmul_precision("highest")
def update_literal(state: LiteralState, x_t, y_t, step_size: Callable) -> LiteralState:
  """One step of Eq. (1) as written: a sum over every earlier example.

  Once the buffer is full (state.step == capacity) a further step sets w to NaN rather than
  silently forgetting an example; ``fit_stream`` raises before that happens.

  Args:
    state: ``LiteralState`` after t - 1 examples.
    x_t: [d] example t.
    y_t: scalar label of example t.
    step_size: callable t -> gamma_t, called with t = state.step + 1.

  Returns:
    ``LiteralState`` after t examples, holding w_{t+1}.
  """
  x_t, y_t = _as_example(state.w, x_t, y_t)
  gamma = step_size_at(step_size, state.step + 1, state.w.dtype)
  w = jnp.where(state.step >= 1, state.w - gamma * literal_gradient(state, x_t, y_t), state.w)
  w = jnp.where(state.step < state.x_seen.shape[0], w, jnp.nan)
  return LiteralState(
      step=state.step + 1,
      w=w,
      x_seen=jax.lax.dynamic_update_index_in_dim(state.x_seen, x_t, state.step, 0),
      y_seen=jax.lax.dynamic_update_index_in_dim(state.y_seen, y_t, state.step, 0))
