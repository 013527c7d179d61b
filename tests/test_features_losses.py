"""Random Fourier features against the exact kernel; loss derivatives against jax.grad."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from qsg_jax import config
from qsg_jax import numerics
from qsg_jax.engine import features
from qsg_jax.engine import kernels
from qsg_jax.engine import losses


def test_features_approximate_gaussian_kernel(key):
  sigma = 0.7

  @jax.jit   # one compilation instead of one per eager operation
  def gram(key):
    x = jax.random.uniform(jax.random.key(1), (6, 4))
    phi = features.block_features(key, 3, x, 40_000, sigma)
    return phi @ phi.T, kernels.gaussian_kernel(x, x, sigma), jnp.sum(phi * phi, axis=1)

  approx, exact, norms = gram(key)
  np.testing.assert_allclose(approx, exact, atol=0.02)
  np.testing.assert_allclose(norms, 1.0, rtol=1e-5)  # cos^2 + sin^2


def test_blocks_are_regenerated_from_key_and_index(key):
  # One compilation (block and sigma traced) instead of one per eager operation.
  sample = jax.jit(features.sample_frequencies, static_argnums=(2, 3))
  a = sample(key, 5, 8, 3, 0.5)
  b = sample(key, 5, 8, 3, 0.5)
  c = sample(key, 6, 8, 3, 0.5)
  np.testing.assert_array_equal(a, b)
  assert not np.allclose(a, c)
  # Frequencies scale as sqrt(2 sigma): spectral density N(0, 2 sigma I).
  np.testing.assert_allclose(sample(key, 5, 8, 3, 2.0), 2 * a, rtol=1e-6)


def test_grouped_scores_equal_sum_over_blocks(key):
  @jax.jit   # one compilation instead of one per eager operation
  def both(key):
    x = jax.random.normal(jax.random.key(2), (10, 3))
    coef = jax.random.normal(jax.random.key(3), (4, 6, 2))          # 4 blocks, 2 functions
    blocks = jnp.arange(4) + 7
    omega = features.sample_frequency_blocks(key, blocks, 3, 3, 0.3)
    # Block by block (vmapped over the block index: one traced block_features instead of four).
    per_block = jax.vmap(lambda i, c: features.block_features(key, i, x, 3, 0.3) @ c)(blocks, coef)
    return features.grouped_multi_scores(x, omega, coef), per_block.sum(axis=0)

  grouped, expected = both(key)
  assert float(jnp.max(jnp.abs(expected))) > 1e-2
  np.testing.assert_allclose(grouped, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("limit", [1.0, 50.0, 1e4, numerics.MAX_PHASE])
def test_cos_sin_matches_float64_cos_and_sin(limit):
  z = np.random.default_rng(0).uniform(-limit, limit, 200_000).astype(np.float32)
  z[:5] = [0.0, np.pi / 4, -np.pi / 2, np.float32(np.pi), limit]     # quadrant boundaries
  cos, sin = jax.jit(features.cos_sin)(z)
  np.testing.assert_allclose(np.asarray(cos, np.float64), np.cos(z.astype(np.float64)), atol=1.5e-7)
  np.testing.assert_allclose(np.asarray(sin, np.float64), np.sin(z.astype(np.float64)), atol=1.5e-7)


def test_cos_sin_beyond_its_range_is_nan_not_noise():
  cos, sin = jax.jit(features.cos_sin)(np.asarray([2.0 * numerics.MAX_PHASE, -1e9, 3.0],
                                                  np.float32))
  assert np.isnan(cos[:2]).all() and np.isnan(sin[:2]).all()
  np.testing.assert_allclose([cos[2], sin[2]], [np.cos(3.0), np.sin(3.0)], atol=1.5e-7)


def test_feature_shape_error(key):
  with pytest.raises(ValueError, match="as many features as the model was trained on"):
    features.fourier_features(jnp.ones((2, 3)), jnp.ones((4, 5)))


@pytest.mark.parametrize("name", ["squared", "hinge", "logistic"])
def test_loss_derivatives_match_jax_grad(name):
  loss = losses.get_loss(name)
  rng = np.random.default_rng(0)
  for u, v in rng.normal(size=(20, 2)):
    if name == "hinge" and abs(1 - u + v) < 1e-3:
      continue
    du, dv = jax.grad(loss.value, argnums=(0, 1))(u, v)
    d1, d2 = losses.pairwise_loss_grads(name, u, v)
    np.testing.assert_allclose([d1, d2], [du, dv], rtol=1e-5, atol=1e-6)


def test_squared_loss_closed_form():
  assert float(losses.SQUARED.value(2.0, 0.5)) == pytest.approx(0.25)
  assert float(losses.HINGE.value(0.0, 0.5)) == pytest.approx(1.5)
  assert float(losses.LOGISTIC.value(1.0, 1.0)) == pytest.approx(np.log(2.0))


@pytest.mark.parametrize("name", ["squared", "hinge", "logistic"])
def test_six_subproblem_derivatives_match_jax_grad(name):
  loss = losses.get_loss(name)
  f_l = jnp.array([0.3, -0.4, 1.25])   # no pair on the hinge kink 1 - u + v = 0
  f_u = jnp.array([0.15, -0.65])
  d = jax.jit(losses.subproblem_derivatives, static_argnums=0)(name, f_l, f_u)
  assert [x.shape for x in d] == [(3, 3), (3, 3), (3, 2), (3, 2), (2, 3), (2, 3)]
  d = jax.tree.map(np.asarray, d)
  f_l, f_u = np.asarray(f_l), np.asarray(f_u)
  grad = jax.jit(jax.grad(loss.value, argnums=(0, 1)))   # one compilation for every pair
  for a in range(3):
    for b in range(3):
      np.testing.assert_allclose([d.l1[a, b], d.l2[a, b]], grad(f_l[a], f_l[b]), rtol=1e-6)
    for u in range(2):   # (positive a, unlabeled u) and (unlabeled u, negative a)
      np.testing.assert_allclose([d.l3[a, u], d.l4[a, u]], grad(f_l[a], f_u[u]), rtol=1e-6)
      np.testing.assert_allclose([d.l5[u, a], d.l6[u, a]], grad(f_u[u], f_l[a]), rtol=1e-6)


def test_unknown_loss_error():
  with pytest.raises(ValueError, match="unknown pairwise loss 'cubic'"):
    losses.get_loss("cubic")


def test_the_configuration_knows_every_named_loss():
  """FitConfig refuses an unknown name when built (config.LOSSES); the engine's names agree."""
  assert sorted(losses._LOSSES) == sorted(config.LOSSES)
