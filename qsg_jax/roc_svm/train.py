"""Full-batch Optax training of the ROC-SVM objective and the intercept for a target rate.

The paper minimizes its objective (Eq. 7 / 12) by full-batch gradient steps with Adamax (Sec. 2.2,
Eq. 8). ``minimize`` runs any ``optax.GradientTransformation`` inside one jitted
``lax.while_loop``; ``roc_svm.fit`` defaults to L-BFGS (``lbfgs_optimizer``: on the kernel fits
of Tables 2-3 it stops in 25-75 steps at an objective no higher than 2000 Adamax steps reach),
and ``default_optimizer`` is the paper's Adamax. The loop stops when the relative change of the
objective, |F_t - F_{t-1}| / |F_{t-1}|, stays below ``tol`` for ``patience`` consecutive steps,
when it reaches ``max_steps``, or as soon as the objective is not finite (reported, never
returned silently).

The intercept alpha cancels in every pair margin and is not identified by the objective (Sec.
2.2); ``intercept_for_rate`` picks it afterwards for a target sensitivity or specificity on the
training scores.
"""

import functools
import math
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from qsg_jax import _validation as validation
from qsg_jax import numerics


class MinimizeState(NamedTuple):
  """Carry of the optimization loop after ``step`` gradient steps."""
  params: jax.Array     # [p] float32 current coefficients.
  evaluated: jax.Array  # [p] float32 coefficients at which ``value`` was evaluated.
  opt_state: optax.OptState
  step: jax.Array       # int32 scalar, gradient steps taken.
  value: jax.Array      # float32 scalar, objective before the last step (inf before any).
  calm: jax.Array       # int32 scalar, consecutive steps with relative change < tol.
  values: jax.Array     # [max_steps] float32 objective before each step (NaN after stop).


class MinimizeResult(NamedTuple):
  params: jax.Array     # [p] the last evaluated iterate (the update after it is dropped).
  value: jax.Array      # scalar objective at ``params``.
  num_steps: jax.Array  # int32 scalar, gradient steps taken.
  converged: jax.Array  # bool scalar, the relative-change rule stopped the loop.
  values: jax.Array     # [max_steps] objective trace (inf beyond ``num_steps``).


@functools.lru_cache(maxsize=None)
def default_optimizer(learning_rate=0.05):
  """``optax.adamax(learning_rate)`` (the paper's optimizer), one object per learning rate.

  Returning the same object for the same rate keeps ``minimize``'s compilation cache warm.
  """
  return optax.adamax(learning_rate)


@functools.lru_cache(maxsize=None)
def lbfgs_optimizer(memory_size=10):
  """``optax.lbfgs(memory_size=...)`` with its zoom line search, one object per memory size.

  The default optimizer of ``roc_svm.fit``: on the (convex, piecewise quadratic) ROC-SVM
  objective it reaches a lower objective than 2000 Adamax steps in tens of steps, for the
  linear, Nystrom and exact kernel models (``experiments/bench_roc_svm.py`` measures it).
  Returning the same object keeps ``minimize``'s compilation cache warm.
  """
  return optax.lbfgs(memory_size=memory_size)


OPTIMIZERS = ("lbfgs", "adamax")


def check_rate(name, value):
  """``value`` as a float in (0, 1] (a target sensitivity or specificity), else a clear error.

  Raises:
    TypeError: not a real number (None, a string, a bool, an array).
    ValueError: NaN, or outside (0, 1].
  """
  try:
    if isinstance(value, (bool, np.bool_, str, bytes)) or value is None or np.ndim(value):
      raise TypeError
    rate = float(value)
  except (TypeError, ValueError):
    raise TypeError(f"{name} must be a number in (0, 1], e.g. 0.9; received "
                    f"{type(value).__name__} {value!r:.60}.") from None
  if not 0.0 < rate <= 1.0:   # False for NaN
    raise ValueError(f"{name} must lie in (0, 1] (a rate on the training points, e.g. 0.9); "
                     f"received {value!r:.60}.")
  return rate


def resolve_optimizer(optimizer, learning_rate, default_learning_rate):
  """The ``optax.GradientTransformation`` that ``fit`` runs.

  Args:
    optimizer: "lbfgs" (default, ``lbfgs_optimizer()``), "adamax" (the paper's choice,
      ``optax.adamax(learning_rate)``) or any ``optax.GradientTransformation``.
    learning_rate: Adamax learning rate; only valid with optimizer="adamax".
    default_learning_rate: Adamax rate used when ``learning_rate`` is None.

  Returns:
    The transformation (the same object for the same request, so compilations are reused).
  """
  if isinstance(optimizer, optax.GradientTransformation):
    if learning_rate is not None:
      raise ValueError("learning_rate applies to optimizer='adamax' only; set the rate inside "
                       "your optax.GradientTransformation instead.")
    return optimizer
  if optimizer not in OPTIMIZERS:
    raise ValueError(f"optimizer must be one of {OPTIMIZERS} or an optax.GradientTransformation;"
                     f" received {optimizer!r}.")
  if optimizer == "lbfgs":
    if learning_rate is not None:
      raise ValueError("learning_rate applies to optimizer='adamax' only; L-BFGS chooses its "
                       "step by line search. Pass optimizer='adamax' to set a learning rate.")
    return lbfgs_optimizer()
  rate = default_learning_rate if learning_rate is None else learning_rate
  return default_optimizer(check_learning_rate(rate))


def check_learning_rate(rate):
  """Adamax's learning rate as a float > 0 that float32 holds, else a clear error naming
  ``learning_rate`` (beyond float32 it became inf inside the optimizer)."""
  return validation.check_float32_range(
      "learning_rate", validation.check_positive("learning_rate", rate),
      "Adamax computes in float32, where it would become inf (a NaN objective). Pass a rate "
      "near the default 0.05.")


def _update(optimizer, grads, opt_state, params, value, objective_fn):
  if isinstance(optimizer, optax.GradientTransformationExtraArgs):
    return optimizer.update(grads, opt_state, params, value=value, grad=grads,
                            value_fn=objective_fn)
  return optimizer.update(grads, opt_state, params)


@functools.partial(jax.jit, static_argnames=("objective", "optimizer", "max_steps", "patience"))
@numerics.full_precision
def minimize(objective: Callable, params, data, lam, optimizer: optax.GradientTransformation,
             *, max_steps: int, tol, patience: int = 10):
  """Minimizes ``objective(params, data, lam)`` by full-batch steps of ``optimizer``.

  Args:
    objective: hashable callable (params, data, lam) -> scalar, e.g. ``roc_svm.Objective``;
      static, so pass the same object (or an equal one) to reuse the compiled loop.
    params: [p] initial coefficients.
    data: pytree of arrays passed to ``objective``.
    lam: scalar regularization (traced: a lambda grid does not recompile).
    optimizer: any ``optax.GradientTransformation`` (static); optimizers with extra arguments
      (e.g. ``optax.lbfgs``) receive value, grad and value_fn.
    max_steps: most gradient steps (static).
    tol: relative-change tolerance of the stopping rule (traced).
    patience: consecutive calm steps required to stop (static).

  Returns:
    ``MinimizeResult`` with the last iterate whose objective was evaluated (the value that
    stopped the loop); a non-finite objective stops the loop and shows in ``value``.
  """
  def value_fn(p):
    return objective(p, data, lam)

  value_and_grad = jax.value_and_grad(value_fn)

  def cond(state):
    finite = (state.step == 0) | jnp.isfinite(state.value)   # value is inf before the first step
    return (state.step < max_steps) & (state.calm < patience) & finite

  def body(state):
    value, grads = value_and_grad(state.params)
    change = jnp.abs(value - state.value) / jnp.maximum(jnp.abs(state.value), 1e-30)
    calm = jnp.where(change < tol, state.calm + 1, 0)
    updates, opt_state = _update(optimizer, grads, state.opt_state, state.params, value, value_fn)
    params = optax.apply_updates(state.params, updates)
    return MinimizeState(params, state.params, opt_state, state.step + 1, value, calm,
                         state.values.at[state.step].set(value))

  init = MinimizeState(params, params, optimizer.init(params), jnp.int32(0),
                       jnp.asarray(jnp.inf, params.dtype), jnp.int32(0),
                       jnp.full((max_steps,), jnp.inf, params.dtype))   # not NaN: jax_debug_nans
  final = jax.lax.while_loop(cond, body, init)
  # The iterate whose objective is known: no second copy of the objective in the program.
  return MinimizeResult(final.evaluated, final.value, final.step, final.calm >= patience,
                        final.values)


def intercept_for_rate(scores, labels, target, rate="sensitivity"):
  """Intercept alpha so that sign(alpha + f(x)) reaches a target rate on the given points.

  A point is predicted positive when ``alpha + f(x) > 0``. For ``rate="sensitivity"`` at least
  ceil(target n+) positives score above -alpha; for "specificity" at least ceil(target n-)
  negatives score at or below it. The threshold -alpha sits halfway to the next distinct score,
  so the rate is met exactly on these points and ties cannot break it (paper Sec. 2.2, after
  Kim et al. 2020).

  Args:
    scores: [n] scores f(x) without intercept (training points).
    labels: [n] labels, positive where > 0.
    target: rate in (0, 1].
    rate: "sensitivity" (true positive rate) or "specificity" (true negative rate).

  Returns:
    The intercept alpha as a Python float.

  Raises:
    ValueError: NaN / infinite scores, labels outside {0, 1} / {-1, +1}, shapes that differ,
      a target outside (0, 1], no point of the class the rate counts.
  """
  validation.check_scores("scores", np.reshape(scores, -1))
  scores = np.asarray(scores, np.float64).reshape(-1)
  labels = np.asarray(labels).reshape(-1)
  if scores.shape != labels.shape:
    raise ValueError(f"scores and labels must have the same shape [n]; received {scores.shape} "
                     f"and {labels.shape}.")
  validation.check_binary_labels(labels)
  if rate not in ("sensitivity", "specificity"):
    raise ValueError(f"rate must be 'sensitivity' or 'specificity'; received {rate!r}.")
  target = check_rate(f"target {rate}", target)
  group = scores[labels > 0] if rate == "sensitivity" else scores[labels <= 0]
  if group.size == 0:
    side = "positive" if rate == "sensitivity" else "negative"
    raise ValueError(f"a target {rate} needs {side} points; none among the {labels.size} labels.")
  needed = math.ceil(target * group.size - 1e-9)
  distinct = np.unique(group)                          # ascending
  if rate == "sensitivity":
    # Threshold t < v, the needed-th largest score; halfway down to the next smaller value.
    v = np.sort(group)[group.size - needed]
    below = distinct[distinct < v]
    t = 0.5 * (v + below[-1]) if below.size else v - 1.0
  else:
    # Threshold t >= u, the needed-th smallest score; halfway up to the next larger value.
    u = np.sort(group)[needed - 1]
    above = distinct[distinct > u]
    t = 0.5 * (u + above[0]) if above.size else u + 1.0
  return float(-t)
