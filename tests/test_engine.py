"""The blocked engine against the literal Algorithm 1, plus determinism, vmap and recompilation."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from qsg_jax import engine
from qsg_jax import reference


def _data(k=3, n_l=40, n_u=300, d=4, seed=0):
  rng = np.random.default_rng(seed)
  y = np.concatenate([np.arange(k), rng.integers(0, k, n_l - k)]).astype(np.int32)
  x_l = (rng.random((n_l, d)) + 0.3 * y[:, None]).astype(np.float32)
  x_u = rng.random((n_u, d)).astype(np.float32)
  return engine.TrainData(jnp.asarray(x_l), jnp.asarray(y), jnp.asarray(x_u))


def _hyper(k, sigma=0.5, lam=0.01, gamma=0.5, eta0=1.0):
  return engine.Hyperparams(jnp.float32(sigma), jnp.float32(lam),
                            jnp.full(k - 1, gamma, jnp.float32), jnp.float32(eta0))


def _run(key, data, hyper, config):
  state = engine.init(key, data, config)
  return engine.train(state, data, hyper, config, config.num_steps // config.chunk_size)


CASES = {
    "ordinal_all_labeled": dict(k=3, labeled_batch_size=None, loss="squared"),
    "ordinal_minibatch": dict(k=4, labeled_batch_size=5, loss="squared"),
    "binary_minibatch": dict(k=2, labeled_batch_size=6, loss="squared"),
    "ordinal_hinge": dict(k=3, labeled_batch_size=None, loss="hinge"),
    "binary_logistic": dict(k=2, labeled_batch_size=None, loss="logistic"),
    "ordinal_cached_unlabeled": dict(k=3, labeled_batch_size=4, loss="squared", cache=True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_engine_equals_literal_algorithm(case, key):
  spec = CASES[case]
  k = spec["k"]
  data = _data(k)
  hyper = _hyper(k)
  config = engine.EngineConfig(num_classes=k, num_steps=48, num_frequencies=6,
                               labeled_batch_size=spec["labeled_batch_size"],
                               unlabeled_batch_size=8, loss=spec["loss"], chunk_size=12,
                               block_group=4, cache_unlabeled=spec.get("cache", False))
  state, _ = _run(key, data, hyper, config)
  alphas = reference.reference_fit(key, data, hyper, config)
  assert float(jnp.max(jnp.abs(alphas))) > 1e-3  # the run did learn something
  np.testing.assert_allclose(state.scale * state.coef, alphas, rtol=2e-4, atol=2e-6)
  # Cached labeled scores and chunked prediction equal Algorithm 2.
  f_literal = reference.predict_literal(state.feature_key, alphas, 48, data.x_labeled, 6,
                                        hyper.sigma)
  np.testing.assert_allclose(state.f_labeled, f_literal, rtol=1e-4, atol=1e-5)
  model = engine.model_of(state, hyper)
  np.testing.assert_allclose(engine.predict(model, data.x_labeled, block_group=4, predict_chunk=7),
                             f_literal, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("schedule", ["decay_hits_zero", "negative_decay"])
def test_running_scale_is_exact_for_extreme_decays(schedule, key):
  """eta lam = 1 zeroes the old coefficients; eta lam > 1 flips their sign (theta / t)."""
  k = 2
  data = _data(k)
  if schedule == "decay_hits_zero":
    hyper, step_size = _hyper(k, lam=1.0, eta0=1.0), None      # eta_0 lam = 1
  else:
    hyper, step_size = _hyper(k, lam=0.5), lambda t: 3.0 / (t + 1.0)   # theta lam = 1.5
  config = engine.EngineConfig(num_classes=k, num_steps=24, num_frequencies=4,
                               unlabeled_batch_size=8, chunk_size=6, block_group=3,
                               step_size=step_size, cache_unlabeled=schedule == "negative_decay")
  state, _ = _run(key, data, hyper, config)
  alphas = reference.reference_fit(key, data, hyper, config)
  np.testing.assert_allclose(state.scale * state.coef, alphas, rtol=2e-4, atol=2e-6)
  assert np.all(np.isfinite(state.coef))


def test_same_key_same_result_and_no_recompile(key):
  data = _data(3)
  hyper = _hyper(3)
  config = engine.EngineConfig(num_classes=3, num_steps=16, num_frequencies=4,
                               unlabeled_batch_size=8, chunk_size=8, block_group=4)
  first, _ = _run(key, data, hyper, config)
  compiled = engine.train._cache_size()
  # Same shapes, new values (hyper-parameters are traced, not static): no new compilation.
  second, _ = _run(key, data, _hyper(3, sigma=0.5), config)
  assert engine.train._cache_size() == compiled
  np.testing.assert_array_equal(first.coef, second.coef)
  other, _ = _run(jax.random.key(7), data, hyper, config)
  assert not np.allclose(first.coef, other.coef)
  _run(key, data, _hyper(3, sigma=0.9, lam=0.1), config)
  assert engine.train._cache_size() == compiled


def test_vmap_over_keys_equals_separate_runs():
  data = _data(2)
  hyper = _hyper(2)
  config = engine.EngineConfig(num_classes=2, num_steps=16, num_frequencies=4,
                               unlabeled_batch_size=8, chunk_size=8, block_group=4)
  keys = jax.random.split(jax.random.key(3), 2)
  states = jax.vmap(lambda k: engine.init(k, data, config))(keys)
  batched, _ = jax.vmap(lambda s: engine.train(s, data, hyper, config, 2))(states)
  for i in range(2):
    single, _ = _run(keys[i], data, hyper, config)
    np.testing.assert_allclose(batched.coef[i], single.coef, rtol=1e-5, atol=1e-7)


def test_jit_equals_no_jit(key):
  data = _data(2, n_l=10, n_u=20)
  hyper = _hyper(2)
  config = engine.EngineConfig(num_classes=2, num_steps=4, num_frequencies=3,
                               unlabeled_batch_size=4, chunk_size=4, block_group=2)
  jitted, _ = _run(key, data, hyper, config)
  with jax.disable_jit():
    eager, _ = _run(key, data, hyper, config)
  np.testing.assert_allclose(jitted.coef, eager.coef, rtol=1e-4, atol=1e-6)
