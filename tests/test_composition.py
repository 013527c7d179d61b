"""The composition examples of the README, as tests: jit, vmap, reuse in other models, schedules,
and which kind of differentiation through ``train`` works."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import qsg_jax
from qsg_jax import engine

_T = 16
_CONFIG = engine.EngineConfig(num_classes=3, num_steps=_T, num_frequencies=4,
                               unlabeled_batch_size=8, chunk_size=8, block_group=4)


def _data():
  rng = np.random.default_rng(0)
  x_l = rng.random((30, 2)).astype(np.float32)
  y_l = np.arange(30) % 3
  x_u = rng.random((40, 2)).astype(np.float32)
  return engine.TrainData(jnp.asarray(x_l), jnp.asarray(y_l, jnp.int32), jnp.asarray(x_u))


def _hyper(lam=1e-2):
  return engine.Hyperparams(sigma=jnp.float32(1.0), lam=jnp.float32(lam),
                             gamma=jnp.full(2, 0.5, jnp.float32), eta0=jnp.float32(0.5))


def _run(key, lam=1e-2):
  """A whole training run, init + train: [n_l] final scores on the labeled points."""
  data = _data()
  state = engine.init(key, data, _CONFIG)
  state, _ = engine.train(state, data, _hyper(lam), _CONFIG, _T)
  return state.f_labeled


# The README's pattern (a vmap of a jitted whole run equals each key's run on its own) is checked
# on the README's own block: tests/test_docs.py::test_readme_python_blocks_run_in_order.


def test_features_and_derivatives_inside_another_jax_model():
  """A linear model on qsg_jax's random features, trained with a pairwise loss through jax.grad;
  its gradient equals the chain rule written with ``subproblem_derivatives`` (l1', l2')."""
  key = jax.random.key(2)
  x = jnp.asarray(np.random.default_rng(2).random((12, 3)), jnp.float32)
  y = np.arange(12) % 2
  omega = engine.features.sample_frequencies(key, 0, 8, 3, 1.0)           # [m, d]
  loss = engine.losses.get_loss("squared")
  pos, neg = (y == 1).astype(np.float32), (y == 0).astype(np.float32)

  def model_loss(w):
    f = engine.features.fourier_features(x, omega) @ w                     # [n]
    return jnp.sum(pos[:, None] * neg[None, :] * loss.value(f[:, None], f[None, :]))

  w = jnp.asarray(np.random.default_rng(3).normal(size=16), jnp.float32)

  @jax.jit   # one compilation instead of one per eager operation
  def by_hand_and_grad(w):
    phi = engine.features.fourier_features(x, omega)
    d = engine.losses.subproblem_derivatives("squared", phi @ w, jnp.zeros(1))
    weight = pos[:, None] * neg[None, :]
    by_hand = (jnp.sum(weight * d.l1, axis=1) @ phi) + (jnp.sum(weight * d.l2, axis=0) @ phi)
    return by_hand, jax.grad(model_loss)(w)

  by_hand, grad = by_hand_and_grad(w)
  np.testing.assert_allclose(grad, by_hand, rtol=1e-4, atol=1e-4)
  # And the model trains: a few steps of optax lower the loss.
  opt = optax.sgd(1e-3)

  @jax.jit
  def sgd_step(w, opt_state):
    updates, opt_state = opt.update(jax.grad(model_loss)(w), opt_state)
    return optax.apply_updates(w, updates), opt_state

  loss_of = jax.jit(model_loss)   # one compilation for both evaluations, not one per eager op
  opt_state, start = opt.init(w), loss_of(w)
  for _ in range(20):
    w, opt_state = sgd_step(w, opt_state)
  assert loss_of(w) < start


def test_optax_schedule_as_the_step_size():
  schedule = optax.cosine_decay_schedule(init_value=0.5, decay_steps=_T)
  data = _data()
  result = qsg_jax.fit(np.asarray(data.x_labeled), np.asarray(data.y_labeled),
                       np.asarray(data.x_unlabeled), key=0, step_size=schedule, num_steps=_T,
                       num_frequencies=4, unlabeled_batch_size=8, chunk_size=8)
  np.testing.assert_allclose(result.metrics["eta"], schedule(np.arange(_T)), rtol=1e-6)
  # The pure engine takes it too. fit's own config and segment length: nothing new to compile.
  config = result.config
  assert config.schedule is schedule and _T % config.chunk_size == 0
  hyper = _hyper()._replace(eta0=None)
  state = engine.init(jax.random.key(0), data, config)
  etas = []
  for _ in range(_T // config.chunk_size):
    state, metrics = engine.train(state, data, hyper, config, config.chunk_size)
    etas.append(metrics["eta"])
  np.testing.assert_allclose(np.concatenate(etas), schedule(np.arange(_T)), rtol=1e-6)


def test_forward_mode_through_train_works_and_reverse_mode_does_not():
  """jax.jvp w.r.t. lam matches central differences; jax.grad fails (dynamic-length loops)."""
  key = jax.random.key(4)
  lam, h = 1e-2, 1e-3
  _, tangent = jax.jvp(lambda l: _run(key, l), (jnp.float32(lam),), (jnp.float32(1.0),))
  central = (_run(key, lam + h) - _run(key, lam - h)) / (2 * h)
  np.testing.assert_allclose(tangent, central, rtol=0.05, atol=0.02)
  assert np.max(np.abs(tangent)) > 0.1      # lam does move the scores
  # jax.grad fails while transposing the loops, at trace time: under jax.eval_shape it fails the
  # same way without first compiling (and running) the linearized training run, as an eager
  # jax.grad does.
  with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
    jax.eval_shape(jax.grad(lambda l: jnp.sum(_run(key, l))), jnp.float32(lam))


def test_seeds_grids_meshes_and_strict_promotion_as_a_jax_user_writes_them():
  """Sweep O (2026-11-29): an int seed under jit / vmap failed in JAX's key checks; a grid of
  sigma passed without vmap failed in a float() deep inside; arrays laid out on the library's own
  global_mesh() (Explicit axes in recent JAX) crashed in a gather (now Auto; arrays on any
  Explicit-axis mesh are laid out on the same devices with Auto axes); x64 with strict promotion
  crashed on an int64 arange."""
  data, hyper = _data(), _hyper()
  by_key = [engine.init(jax.random.key(s), data, _CONFIG).feature_key for s in (0, 1)]
  by_seed = jax.vmap(lambda s: engine.init(s, data, _CONFIG).feature_key)(jnp.arange(2))
  for s in (0, 1):
    np.testing.assert_array_equal(jax.random.key_data(by_seed[s]), jax.random.key_data(by_key[s]))
  state = engine.init(0, data, _CONFIG)
  with pytest.raises(ValueError, match=r"hyper.sigma must be a scalar; received shape \(3,\)"):
    engine.train(state, data, hyper._replace(sigma=jnp.ones(3)), _CONFIG, _T)
  want, _ = engine.train(state, data, hyper, _CONFIG, _T)
  mesh = qsg_jax.distributed.global_mesh()
  laid = jax.device_put(data.x_unlabeled, jax.sharding.NamedSharding(
      mesh, jax.sharding.PartitionSpec("data")))
  got, _ = engine.train(state, data._replace(x_unlabeled=laid), hyper, _CONFIG, _T)
  np.testing.assert_array_equal(got.head_coef, want.head_coef)
  explicit = getattr(getattr(jax.sharding, "AxisType", None), "Explicit", None)
  if explicit is not None:
    other = jax.make_mesh((1,), ("data",), axis_types=(explicit,))
    laid = jax.device_put(data.x_unlabeled, jax.sharding.NamedSharding(
        other, jax.sharding.PartitionSpec("data")))
    got, _ = engine.train(state, data._replace(x_unlabeled=laid), hyper, _CONFIG, _T)
    np.testing.assert_array_equal(got.head_coef, want.head_coef)   # was refused (gathers failed)
    x_l, y_l = np.asarray(data.x_labeled), np.asarray(data.y_labeled)
    on_host, on_mesh = (qsg_jax.direct.fit(x_l, y_l, x_u, sigma=1.0, lam=1e-2, gamma=0.5)
                        for x_u in (np.asarray(data.x_unlabeled), laid))
    np.testing.assert_array_equal(on_mesh.model.coef, on_host.model.coef)
  with jax.numpy_dtype_promotion("strict"), jax.enable_x64(True):
    strict, _ = engine.train(engine.init(0, data, _CONFIG), data, hyper, _CONFIG, _T)
    direct = qsg_jax.direct.fit(np.asarray(data.x_labeled), np.asarray(data.y_labeled),
                                np.asarray(data.x_unlabeled), sigma=1.0, lam=1e-2, gamma=0.5)
  np.testing.assert_allclose(strict.head_coef, want.head_coef, rtol=1e-5, atol=1e-6)
  assert np.all(np.isfinite(direct.model.coef))
