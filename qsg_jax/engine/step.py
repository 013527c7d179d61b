"""One DSG iteration: its step size eta_i (the schedules) and, later, the scan body."""

from typing import Callable

import jax
import jax.numpy as jnp

from qsg_jax.engine.types import EngineConfig
from qsg_jax.engine.types import Hyperparams


def inverse_time_schedule(eta0, lam) -> Callable[[jax.Array], jax.Array]:
  """eta_t = eta0 / (1 + eta0 lam t): starts at eta0, decays like 1 / (lam t) (theta = 1/lam).

  Example:
    >>> float(inverse_time_schedule(2.0, 0.5)(2.0))
    0.6666666865348816
  """
  return lambda step: jnp.asarray(eta0 / (1.0 + eta0 * lam * step), jnp.float32)


def step_size(config: EngineConfig, hyper: Hyperparams, step: jax.Array) -> jax.Array:
  """eta of iteration ``step`` (0-based): ``config.schedule``, or the default from ``hyper.eta0``.

  Raises:
    ValueError (at trace time): both or neither of ``config.schedule`` and ``hyper.eta0`` set.
  """
  if (config.schedule is None) == (hyper.eta0 is None):
    raise ValueError(
        "set exactly one step size: EngineConfig.schedule (a callable) or Hyperparams.eta0 (the "
        "initial step of eta0 / (1 + eta0 lam t)); received "
        + ("both: Hyperparams.eta0 would be ignored, pass eta0=None."
           if hyper.eta0 is not None else "neither."))
  if config.schedule is not None:
    return jnp.asarray(config.schedule(step), jnp.float32)
  return inverse_time_schedule(hyper.eta0, hyper.lam)(jnp.asarray(step, jnp.float32))


