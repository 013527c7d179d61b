"""Multi-device runs equal single-device runs. Runs itself on 4 CPU devices in a subprocess.

``python -m pytest tests/test_sharding.py`` on one device re-launches this file with
XLA_FLAGS=--xla_force_host_platform_device_count=4; there the 4-device tests run directly.
"""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import qsg_jax
from qsg_jax import engine
from qsg_jax.engine import reference

FOUR_DEVICES = "--xla_force_host_platform_device_count=4"
needs_four = pytest.mark.skipif(jax.device_count() < 4,
                                reason="needs 4 devices; run via test_on_four_cpu_devices")


def _assert_float32_close(actual, desired):
  """Equal up to float32 rounding: sharded sums add the same terms in another order, which moves
  coefficients by a few ulps of the largest one (measured: 2.1e-7 at max |coef| = 0.68)."""
  desired = np.asarray(desired)
  np.testing.assert_allclose(actual, desired, rtol=1e-5, atol=2e-6 * np.abs(desired).max())


def _data(k=3, n_l=40, n_u=301, d=4):
  rng = np.random.default_rng(0)
  y = np.concatenate([np.arange(k), rng.integers(0, k, n_l - k)]).astype(np.int32)
  x_l = (rng.random((n_l, d)) + 0.3 * y[:, None]).astype(np.float32)
  return engine.TrainData(jnp.asarray(x_l), jnp.asarray(y),
                          jnp.asarray(rng.random((n_u, d)).astype(np.float32)))


@needs_four
@pytest.mark.parametrize("cache_unlabeled", [False, True])
def test_sharded_training_equals_single_device_and_reference(key, cache_unlabeled):
  k = 3
  data = _data(k)
  hyper = engine.Hyperparams(jnp.float32(0.5), jnp.float32(0.01), jnp.full(k - 1, 0.5),
                             jnp.float32(1.0))
  config = engine.EngineConfig(num_classes=k, num_steps=32, num_frequencies=6,
                               unlabeled_batch_size=16, chunk_size=8, block_group=4, num_shards=4,
                               cache_unlabeled=cache_unlabeled)
  single, _ = engine.train(engine.init(key, data, config), data, hyper, config, 32)
  mesh = jax.make_mesh((4,), ("data",))
  sharded_data = data._replace(x_unlabeled=engine.shard_unlabeled(data.x_unlabeled, 4))
  state = engine.init(key, sharded_data, config, num_unlabeled=301)
  sharded, _ = engine.train_sharded(state, sharded_data, hyper, config, 32, mesh)
  _assert_float32_close(sharded.coef, single.coef)
  np.testing.assert_allclose(sharded.f_labeled, single.f_labeled, rtol=1e-5, atol=1e-6)
  alphas = reference.reference_fit(key, data, hyper, config)
  np.testing.assert_allclose(sharded.scale * sharded.coef, alphas, rtol=2e-4, atol=2e-6)


@needs_four
def test_fit_and_predict_on_a_mesh_equal_one_device():
  data = _data(2, n_u=203)
  args = dict(num_steps=16, num_frequencies=4, unlabeled_batch_size=8, chunk_size=8, key=1,
              cache_unlabeled=False)
  mesh = jax.make_mesh((4,), ("data",))
  on_mesh = qsg_jax.fit(data.x_labeled, data.y_labeled, data.x_unlabeled, mesh=mesh, **args)
  one = qsg_jax.fit(data.x_labeled, data.y_labeled, data.x_unlabeled, num_shards=4, **args)
  _assert_float32_close(on_mesh.model.coef, one.model.coef)
  x = np.asarray(data.x_unlabeled)[:101]
  _assert_float32_close(qsg_jax.decision_function(on_mesh, x, mesh=mesh),
                        qsg_jax.decision_function(one, x))
  with pytest.raises(ValueError, match="num_shards=2 differs from the size 4"):
    qsg_jax.fit(data.x_labeled, data.y_labeled, data.x_unlabeled, mesh=mesh, num_shards=2, **args)
  three = jax.sharding.Mesh(np.array(jax.devices()[:3]), ("data",))   # sweep X: it blamed
  with pytest.raises(ValueError, match=r"^mesh axis 'data' has 3 devices, which must divide "
                     r"unlabeled_batch_size=8 .*solver='direct'"):   # EngineConfig, num_shards
    qsg_jax.fit(data.x_labeled, data.y_labeled, data.x_unlabeled, mesh=three, **args)


def test_stratified_sampling_covers_each_stratum():
  from qsg_jax.engine import sampling  # pylint: disable=g-import-not-at-top
  sizes, offsets = sampling.strata(10, 4)
  np.testing.assert_array_equal(sizes, [3, 3, 2, 2])
  idx = np.asarray(sampling.sample_unlabeled(jax.random.key(0), 400, 10, 4))
  for s in range(4):
    part = idx[s * 100:(s + 1) * 100]
    assert part.min() >= offsets[s] and part.max() < offsets[s] + sizes[s]
  with pytest.raises(ValueError, match="cannot fill 4 shards"):
    sampling.strata(3, 4)


@pytest.mark.slow   # the tests above on 4 devices (test_multiprocess runs a 4-device mesh)
def test_on_four_cpu_devices():
  if jax.device_count() >= 4:
    pytest.skip("already on 4 devices: the tests above ran directly")
  env = dict(os.environ, XLA_FLAGS=FOUR_DEVICES, JAX_PLATFORMS="cpu")
  proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         "-W", "error", __file__], env=env, capture_output=True, text=True,
                        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        check=False)
  assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
  assert "4 passed" in proc.stdout, proc.stdout[-2000:]     # and this test skipped or deselected
