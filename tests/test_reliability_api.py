"""Bad inputs of the second audit that belong to the pure engine and the experiments' flags
(the others moved to the test file of their module): short errors that name the argument."""

import jax
import jax.numpy as jnp
import pytest

from qsg_jax import engine
from tests import _cv_data


def test_pure_api_makes_fits_checks_on_concrete_inputs():
  x, y, _ = _cv_data.semi_ordinal()
  config = engine.EngineConfig(num_classes=3, num_steps=32, chunk_size=8, block_group=8,
                               num_frequencies=8, unlabeled_batch_size=16)
  data = engine.TrainData(jnp.asarray(x[:60], jnp.float32), jnp.asarray(y[:60]),
                          jnp.asarray(x[60:], jnp.float32))
  with pytest.raises(ValueError, match=r"labels must be 0\.\.k-1|subtract 1"):
    engine.init(jax.random.key(0), data._replace(y_labeled=data.y_labeled + 1), config)
  with pytest.raises(ValueError, match=r"no point of class\(es\) \[3, 4\]"):
    engine.init(jax.random.key(0), data, config.replace(num_classes=5))
  bad_x = data.x_labeled.at[4, 1].set(jnp.nan)
  with pytest.raises(ValueError, match="data.x_labeled"):
    engine.init(jax.random.key(0), data._replace(x_labeled=bad_x), config)
  state = engine.init(0, data, config)      # an int seed is accepted at this boundary too
  good = engine.Hyperparams(jnp.float32(1.0), jnp.float32(1e-3), jnp.full(2, 0.5), jnp.float32(1))
  for name, value, message in (("gamma", jnp.array([0.5, 1.5]), r"hyper.gamma must be in \[0, 1\]"),
                               ("gamma", jnp.full(3, 0.5), r"shape \[k-1\] = \[2\]"),
                               ("sigma", jnp.float32(-1.0), "hyper.sigma must be finite and > 0"),
                               ("lam", jnp.float32(jnp.nan), "hyper.lam must be finite")):
    with pytest.raises(ValueError, match=message):
      engine.train(state, data, good._replace(**{name: value}), config, 8)
  # Traced inputs are not checked (vmap over a grid still works). The checks happen while
  # tracing, so jax.eval_shape sees them without compiling the vmapped run; running vmapped
  # trainings over a grid is test_model_selection.py's test_vmapped_cv_equals_a_loop_of_fits_on_
  # each_fold (model_selection vmaps init + train over Hyperparams).
  grid = good._replace(lam=jnp.array([1e-3, 1e-2]))
  _, metrics = jax.eval_shape(jax.vmap(lambda h: engine.train(state, data, h, config, 8),
                                       in_axes=(engine.Hyperparams(None, 0, None, None),)), grid)
  assert metrics["eta"].shape == (2, 8)
