"""The blocked engine against the literal Algorithm 1, plus determinism and recompilation (vmap
over keys: test_composition.py)."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from qsg_jax import engine
from qsg_jax.engine import reference


def _data(k=3, n_l=40, n_u=300, d=4, seed=0):
  rng = np.random.default_rng(seed)
  y = np.concatenate([np.arange(k), rng.integers(0, k, n_l - k)]).astype(np.int32)
  x_l = (rng.random((n_l, d)) + 0.3 * y[:, None]).astype(np.float32)
  x_u = rng.random((n_u, d)).astype(np.float32)
  return engine.TrainData(jnp.asarray(x_l), jnp.asarray(y), jnp.asarray(x_u))


def _hyper(k, sigma=0.5, lam=0.01, gamma=0.5, eta0=1.0):
  return engine.Hyperparams(jnp.float32(sigma), jnp.float32(lam),
                            jnp.full(k - 1, gamma, jnp.float32),
                            None if eta0 is None else jnp.float32(eta0))


def _run(key, data, hyper, config):
  state = engine.init(key, data, config)
  return engine.train(state, data, hyper, config, config.num_steps)


def _theta_over_t(t):
  """theta / (t + 1) with theta = 2: with lam = 0.75, eta_0 lam = 1.5 (a negative decay); eta_1
  = 1, so lam = 1 gives eta lam = 1 exactly past step 0 (refused)."""
  return 2.0 / (t + 1.0)


_SMALL_CONFIG = dict(num_steps=16, num_frequencies=4, unlabeled_batch_size=8, chunk_size=8,
                     block_group=4)


# Each case compiles its own train and reference_fit (most of this file's time), so the cases
# are merged: one per loss, and together every k (2, 3, 4), both labeled modes (all / mini-batch),
# both unlabeled pools (chunked / cached) and both step rules (eta0 / schedule). Each case's
# config is also the one of other tests here, which reuse its compilations: the squared case is
# _SMALL_CONFIG with k = 3 (test_same_key_same_result_and_no_recompile,
# test_train_chunk_init_and_model_of_check_their_inputs,
# test_train_refuses_step_counts_that_break_algorithm_1, the first half of
# test_huge_lam_keeps_the_ranking_and_a_fixed_step_past_one_is_refused), the logistic case the
# schedule run (test_running_scale_is_exact_for_a_negative_decay,
# test_step_size_is_set_exactly_once, the second half of
# test_huge_lam_keeps_the_ranking_and_a_fixed_step_past_one_is_refused). The squared loss on
# mini-batches and both pools is also checked against a literal port (the extended one with
# lam_g = inf) by test_split_corrections.py's test_split_lam_none_is_the_literal_algorithm.
# Logistic case: the run with a schedule (and no eta0), cached unlabeled pool, chunks and groups
# other than the other cases'; lam = 0.75 with theta / (t + 1) gives a negative decay.
_SCHEDULE_CONFIG = engine.EngineConfig(num_classes=2, num_steps=24, num_frequencies=4,
                                       unlabeled_batch_size=8, chunk_size=6, block_group=3,
                                       schedule=_theta_over_t, cache_unlabeled=True,
                                       loss="logistic")
CASES = {
    "ordinal_minibatch_hinge": (
        4, dict(lam=0.01), engine.EngineConfig(
            num_classes=4, num_steps=48, num_frequencies=6, labeled_batch_size=5,
            unlabeled_batch_size=8, loss="hinge", chunk_size=12, block_group=4)),
    "binary_logistic_cached_unlabeled_schedule": (2, dict(lam=0.75, eta0=None),
                                                  _SCHEDULE_CONFIG),
    "ordinal_all_labeled_squared": (3, dict(lam=0.01), engine.EngineConfig(num_classes=3,
                                                                           **_SMALL_CONFIG)),
}


_SCORED_CASE = "ordinal_minibatch_hinge"


@functools.lru_cache(maxsize=None)
def _literal_run(case, lam=None):
  """(data, hyper, config, trained state, reference_fit's alphas) of a case with key 0 (the
  ``key`` fixture's), cached: tests that only read a case's run share it."""
  k, hyper_args, config = CASES[case]
  key, data = jax.random.key(0), _data(k)
  hyper = _hyper(k, **dict(hyper_args, **({} if lam is None else dict(lam=lam))))
  state, _ = _run(key, data, hyper, config)
  return data, hyper, config, state, reference.reference_fit(key, data, hyper, config)


@pytest.mark.parametrize("case", sorted(CASES))
def test_engine_equals_literal_algorithm(case):
  data, hyper, config, state, alphas = _literal_run(case)
  assert float(jnp.max(jnp.abs(alphas))) > 1e-3  # the run did learn something
  np.testing.assert_allclose(state.scale * state.coef, alphas, rtol=2e-4, atol=2e-6)
  # Cached labeled scores (every case) and chunked prediction (one case) equal Algorithm 2.
  f_literal = reference.predict_literal(state.feature_key, alphas, config.num_steps,
                                        data.x_labeled, config.num_frequencies, hyper.sigma)
  np.testing.assert_allclose(state.f_labeled, f_literal, rtol=1e-4, atol=1e-5)
  if case == _SCORED_CASE:
    # Scoring does not depend on the loss, the labeled mode, the pool or the step rule: one
    # case (the most blocks, 40 rows in chunks of 7) checks model_scores, whose compilation the
    # other cases would repeat for the same code path.
    model = engine.model_of(state, hyper)
    np.testing.assert_allclose(engine.model_scores(model, data.x_labeled, block_group=4,
                                                   predict_chunk=7),
                               f_literal, rtol=1e-4, atol=1e-5)


def test_running_scale_is_exact_when_the_decay_hits_zero():
  """eta_0 lam = 1 zeroes the old coefficients. Traced hyper-parameters: the squared literal
  case's compilations (train and reference_fit) are reused."""
  _, _, _, state, alphas = _literal_run("ordinal_all_labeled_squared", lam=1.0)
  assert float(jnp.max(jnp.abs(alphas))) > 1e-3
  np.testing.assert_allclose(state.scale * state.coef, alphas, rtol=2e-4, atol=2e-6)
  assert np.all(np.isfinite(state.coef))


def test_running_scale_is_exact_for_a_negative_decay():
  """eta lam > 1 flips the sign of the old coefficients (theta / t, theta lam = 1.5): the
  logistic literal case's run."""
  _, hyper, config, state, alphas = _literal_run("binary_logistic_cached_unlabeled_schedule")
  assert config.schedule is _theta_over_t and float(hyper.lam) * _theta_over_t(0) == 1.5
  assert float(jnp.max(jnp.abs(alphas))) > 1e-3
  np.testing.assert_allclose(state.scale * state.coef, alphas, rtol=2e-4, atol=2e-6)
  assert np.all(np.isfinite(state.coef))


def test_same_key_same_result_and_no_recompile(key):
  data = _data(3)
  hyper = _hyper(3)
  config = engine.EngineConfig(num_classes=3, **_SMALL_CONFIG)   # the squared literal case's
  first, _ = _run(key, data, hyper, config)
  compiled = engine.loop._train_jit._cache_size()  # pylint: disable=protected-access
  # Same shapes, new values (hyper-parameters are traced, not static): no new compilation.
  second, _ = _run(key, data, _hyper(3, sigma=0.5), config)
  assert engine.loop._train_jit._cache_size() == compiled  # pylint: disable=protected-access
  np.testing.assert_array_equal(first.coef, second.coef)
  other, _ = _run(jax.random.key(7), data, hyper, config)
  assert not np.allclose(first.coef, other.coef)
  _run(key, data, _hyper(3, sigma=0.9, lam=0.1), config)
  assert engine.loop._train_jit._cache_size() == compiled  # pylint: disable=protected-access
  # The same values as Python floats, NumPy float64 and float64 data: one program, same answer.
  for kind in (float, np.float64):
    as_kind = engine.Hyperparams(*(kind(v) for v in (0.5, 0.01)), np.full(2, 0.5), kind(1.0))
    numpy_data = data._replace(x_labeled=np.asarray(data.x_labeled, np.float64),
                               x_unlabeled=np.asarray(data.x_unlabeled, np.float64))
    again, _ = engine.train(engine.init(key, data, config), numpy_data, as_kind, config,
                            config.num_steps)
    np.testing.assert_array_equal(again.coef, first.coef)
  assert engine.loop._train_jit._cache_size() == compiled  # pylint: disable=protected-access


# By default the mini-batch case (sampling through the padded class index); the whole-set and
# cached-pool paths are also checked by default through fit (test_fit.py's
# test_new_data_sizes_in_a_bucket_compile_nothing_and_train_as_unpadded).
@pytest.mark.parametrize("case", [pytest.param(c, marks=[] if c == _SCORED_CASE else
                                               pytest.mark.slow) for c in sorted(CASES)])
def test_bucketed_rows_train_the_literal_algorithm_and_share_a_compilation(case, key):
  """``bucket_data`` pads 37 labeled and 300 unlabeled rows to 40 and 320 (weight 0, never
  sampled): the run equals literal Algorithm 1 on the data itself, ``trim_state`` gives the
  unpadded run's state, and 38 labeled / 310 unlabeled points reuse the compilation."""
  k, hyper_args, config = CASES[case]
  data, hyper = _data(k, n_l=37, n_u=300), _hyper(k, **hyper_args)
  padded, n_l, n_u = engine.bucket_data(data)
  assert padded.x_labeled.shape[0] == 40 and padded.x_unlabeled.shape[0] == 320
  assert (n_l, n_u) == (37, 300)
  state = engine.init(key, padded, config, num_unlabeled=n_u, num_labeled=n_l)
  assert float(jnp.sum(state.pos_w[:, 37:])) == 0 == float(jnp.sum(state.neg_w[:, 37:]))
  state, _ = engine.train(state, padded, hyper, config, config.num_steps)
  alphas = reference.reference_fit(key, data, hyper, config)
  assert float(jnp.max(jnp.abs(alphas))) > 1e-3
  np.testing.assert_allclose(state.scale * state.coef, alphas, rtol=2e-4, atol=2e-6)
  trimmed = engine.trim_state(state, config)
  plain = engine.init(key, data, config)
  for name in ("class_order", "class_counts", "pos_w", "neg_w"):
    np.testing.assert_array_equal(getattr(trimmed, name), getattr(plain, name))
  assert trimmed.head_unlabeled.shape[1] in (0, 300)
  f_literal = reference.predict_literal(state.feature_key, alphas, config.num_steps,
                                        data.x_labeled, config.num_frequencies, hyper.sigma)
  np.testing.assert_allclose(trimmed.f_labeled, f_literal, rtol=1e-4, atol=1e-5)
  compiled = engine.loop._train_jit._cache_size()  # pylint: disable=protected-access
  other, n_l, n_u = engine.bucket_data(_data(k, n_l=38, n_u=310, seed=1))
  engine.train(engine.init(key, other, config, num_unlabeled=n_u, num_labeled=n_l), other,
               hyper, config, config.num_steps)
  assert engine.loop._train_jit._cache_size() == compiled  # pylint: disable=protected-access
  # Rows other than the data's or its bucket's are another data set: refused.
  with pytest.raises(ValueError, match="init for n_u = 300"):
    engine.train(state, padded._replace(x_unlabeled=padded.x_unlabeled[:310]), hyper, config,
                 config.num_steps)
  with pytest.raises(ValueError, match="num_labeled=41 does not fit"):
    engine.init(key, padded, config, num_labeled=41)


# vmap over keys equals separate runs: test_composition.py's
# test_jit_a_whole_training_run_and_vmap_it_over_keys (a test here compiled one more vmapped
# train for the same check).


class DsgUpdateVariantsTest(chex.TestCase):
  """``dsg_update`` gives the same coefficients with and without jit, and renormalizes exactly."""

  @chex.variants(with_jit=True, without_jit=True)
  def test_update_and_renormalization(self):
    from qsg_jax.engine import update  # pylint: disable=g-import-not-at-top
    fn = self.variant(update.dsg_update)
    coef = jnp.zeros((3, 2, 1)).at[0, :, 0].set(jnp.array([1.0, 2.0]))
    grad = jnp.array([[1.0, -1.0]])
    out = fn(coef, jnp.array([0.5]), jnp.array([[4.0]]), 1, grad, 0.5, 0.9)
    np.testing.assert_allclose(out.scale[0] * out.coef[:2, :, 0], [[0.45, 0.9], [-0.5, 0.5]],
                               rtol=1e-6)
    np.testing.assert_allclose(out.partial, [[4.0]])
    tiny = fn(coef, jnp.array([1e-20]), jnp.array([[4.0]]), 1, grad, 0.5, 0.9)
    assert float(tiny.scale[0]) == 1.0    # folded: alpha_0 = 1e-20 * 0.9 * coef_0, stored as is
    np.testing.assert_allclose(tiny.coef[0, :, 0], [0.9e-20, 1.8e-20], rtol=1e-5)
    np.testing.assert_allclose(tiny.partial, [[3.6e-20]], rtol=1e-5)
    np.testing.assert_allclose(tiny.coef[1, :, 0], [-0.5, 0.5], rtol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_heads_fold_their_own_scales_and_corrections_take_the_proximal_step(self):
    """Head 0 (f): Eq. (14); heads 1.. (g_j): shrink by 1 / (1 + eta lam_g); a scale below
    RENORMALIZE_BELOW is folded into its own head only."""
    from qsg_jax.engine import update  # pylint: disable=g-import-not-at-top
    fn = self.variant(update.dsg_update)
    coef = jnp.ones((2, 2, 3))
    grad = jnp.array([[1.0, -1.0], [2.0, 0.0], [0.0, 4.0]])
    out = fn(coef, jnp.array([1.0, 1e-20, 1.0]), jnp.ones((3, 1)), 1, grad, 0.5, 0.9, 3.0)
    np.testing.assert_allclose(out.decay, [0.9, 0.4, 0.4], rtol=1e-6)
    np.testing.assert_allclose(out.alpha, [[-0.5, 0.5], [-0.4, 0.0], [0.0, -0.8]], rtol=1e-6)
    np.testing.assert_allclose(out.scale, [0.9, 1.0, 0.4], rtol=1e-6)
    np.testing.assert_allclose(out.coef[0], [[1.0, 4e-21, 1.0]] * 2, rtol=1e-5)
    np.testing.assert_allclose(out.partial[:, 0], [1.0, 4e-21, 1.0], rtol=1e-5)
    np.testing.assert_allclose(out.scale[:, None] * out.block, out.alpha, rtol=1e-6)
    frozen = fn(coef, jnp.ones(3), jnp.ones((3, 1)), 1, grad, 0.5, 0.9, jnp.inf)
    np.testing.assert_array_equal(frozen.alpha[1:], 0.0)


@pytest.mark.slow   # eager dispatch of every engine op (18 s): `make test-slow`
def test_jit_equals_no_jit(key):
  data = _data(2, n_l=10, n_u=20)
  hyper = _hyper(2)
  config = engine.EngineConfig(num_classes=2, num_steps=2, num_frequencies=3,
                               unlabeled_batch_size=4, chunk_size=2, block_group=2)
  jitted, _ = _run(key, data, hyper, config)
  with jax.disable_jit():
    eager, _ = _run(key, data, hyper, config)
  np.testing.assert_allclose(jitted.coef, eager.coef, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("changes, error, match", [
    (dict(chunk_size=5), ValueError, "chunk_size=5 must divide num_steps=16"),
    (dict(block_group=3), ValueError, "block_group=3 must divide chunk_size=8"),
    (dict(unlabeled_batch_size=6, num_shards=4), ValueError, "multiple of num_shards=4"),
    (dict(num_frequencies=0), ValueError, "num_frequencies must be >= 1; received 0"),
    (dict(labeled_batch_size=0), ValueError, "labeled_batch_size must be >= 1"),
    (dict(unlabeled_batch_size=-2), ValueError, "unlabeled_batch_size must be >= 1"),
    (dict(num_classes=1), ValueError, "num_classes must be >= 2"),
    (dict(num_steps=16.0), TypeError, "num_steps must be an integer"),
    (dict(loss="cubic"), ValueError, "unknown pairwise loss 'cubic'"),
    (dict(schedule=0.1), TypeError, "schedule must be a callable"),
])
def test_invalid_config_is_refused_where_it_is_built(changes, error, match):
  args = dict(num_classes=3, num_steps=16, unlabeled_batch_size=8, chunk_size=8, block_group=4)
  with pytest.raises(error, match=match):
    engine.EngineConfig(**dict(args, **changes))
  valid = engine.EngineConfig(**args)
  with pytest.raises(error, match=match):
    valid.replace(**changes)


def test_train_refuses_step_counts_that_break_algorithm_1(key):
  """_SMALL_CONFIG with k = 3, the squared literal case's config (as in
  test_huge_lam_keeps_the_ranking_and_a_fixed_step_past_one_is_refused): nothing new to
  compile."""
  data = _data(3)
  config = engine.EngineConfig(num_classes=3, **_SMALL_CONFIG)
  state = engine.init(key, data, config)
  with pytest.raises(ValueError, match="positive multiple of config.chunk_size=8"):
    engine.train(state, data, _hyper(3), config, 12)
  with pytest.raises(ValueError, match="at most config.num_steps=16"):
    engine.train(state, data, _hyper(3), config, 24)
  state, _ = engine.train(state, data, _hyper(3), config, 16)
  with pytest.raises(ValueError, match="has done 16 of config.num_steps=16 steps"):
    engine.train(state, data, _hyper(3), config, 8)
  # A traced state (under jit or vmap) cannot be checked up front: past the end it gets NaN,
  # never a model with clipped rows. train's jitted program, called directly, sees only traced
  # values (a vmap compiled one more program for the same check).
  train_jit = engine.loop._train_jit  # pylint: disable=protected-access
  over, _ = train_jit(state, data, _hyper(3), config, 16)
  assert np.all(np.isnan(over.coef))


def test_step_size_is_set_exactly_once(key):
  data = _data(2)
  config = _SCHEDULE_CONFIG
  state = engine.init(key, data, config)
  with pytest.raises(ValueError, match="both: Hyperparams.eta0 would be ignored"):
    engine.train(state, data, _hyper(2), config, 24)
  with pytest.raises(ValueError, match="neither"):
    engine.train(state, data, _hyper(2, eta0=None), config.replace(schedule=None), 24)
  # The schedule alone runs (train and reference_fit compiled once, for the logistic literal
  # case), and is the literal Algorithm 1.
  scheduled, _ = engine.train(state, data, _hyper(2, lam=0.75, eta0=None), config, 24)
  alphas = _literal_run("binary_logistic_cached_unlabeled_schedule")[-1]
  np.testing.assert_allclose(scheduled.scale * scheduled.coef, alphas, rtol=2e-4, atol=2e-6)


def test_init_computes_what_the_update_needs(key):
  from qsg_jax.engine import risk, sampling  # pylint: disable=g-import-not-at-top
  data = _data(4)
  config = engine.EngineConfig(num_classes=4, num_steps=8, labeled_batch_size=3,
                               unlabeled_batch_size=8, chunk_size=8, block_group=4)
  state = engine.init(key, data, config)
  slots = sampling.slot_classes(data.y_labeled, 4, 3)
  pos_w, neg_w = risk.subproblem_weights(slots, jnp.bincount(data.y_labeled, length=4))
  np.testing.assert_array_equal(state.pos_w, pos_w)
  np.testing.assert_array_equal(state.neg_w, neg_w)
  assert state.pos_w.shape == (3, 12) and int(state.num_unlabeled) == 300
  np.testing.assert_array_equal(state.class_counts, np.bincount(data.y_labeled, minlength=4))


def test_functional_gradient_is_jax_grad_of_the_risk_through_the_new_block(key):
  """Eq. (13): the new block's gradient is d R(f + alpha . phi_i) / d alpha at alpha = 0, with
  block i's features as the training step draws them (``block_features_of``: one draw of its
  frequencies for the labeled points and the unlabeled batch)."""
  from qsg_jax.engine import features, risk, update  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(4)
  k, n_l, b, d, m = 3, 9, 5, 3, 4
  y = jnp.asarray(np.arange(n_l) % k)
  x_l, x_u = jnp.asarray(rng.random((n_l, d))), jnp.asarray(rng.random((b, d)))
  f_l, f_u = jnp.asarray(rng.normal(size=n_l)), jnp.asarray(rng.normal(size=b))
  gamma = jnp.array([0.3, 0.8])

  @jax.jit   # one compilation instead of one per eager operation
  def both(key, y, x_l, x_u, f_l, f_u):
    pos_w, neg_w = risk.subproblem_weights(y, jnp.bincount(y, length=k))
    phi_l, phi_u = features.block_features_of(key, 2, (x_l, x_u), m, 0.7)
    objective = lambda alpha: risk.minibatch_risk("squared", f_l + phi_l @ alpha,
                                                  f_u + phi_u @ alpha, pos_w, neg_w, gamma)
    g_l, g_u = risk.score_grads("squared", f_l, f_u, pos_w, neg_w, gamma)
    return (update.functional_gradient(g_l, phi_l, g_u, phi_u),
            jax.grad(objective)(jnp.zeros(2 * m)))

  ours, grad = both(key, y, x_l, x_u, f_l, f_u)
  assert float(jnp.max(jnp.abs(grad))) > 1e-3
  np.testing.assert_allclose(ours, grad, rtol=1e-5, atol=1e-6)


def _products_below_the_rule(fn, *args):
  """(products below ``numerics.HIGHEST``, number of products) of every dot_general in the
  jaxpr of ``fn(*args)``, sub-jaxprs of scan, cond, while, pjit, shard_map included."""
  from qsg_jax import numerics  # pylint: disable=g-import-not-at-top
  found, seen = [], []

  def walk(jaxpr):
    for eqn in jaxpr.eqns:
      if eqn.primitive.name == "dot_general":
        seen.append(eqn)
        precision = eqn.params["precision"]
        if not (isinstance(precision, tuple) and
                all(p == numerics.HIGHEST for p in precision)):
          found.append((str(eqn.source_info.traceback).splitlines()[-1:], precision))
      for value in eqn.params.values():
        for sub in value if isinstance(value, (tuple, list)) else (value,):
          sub = getattr(sub, "jaxpr", sub)              # ClosedJaxpr -> Jaxpr
          if hasattr(sub, "eqns"):
            walk(sub)

  walk(jax.make_jaxpr(fn)(*args).jaxpr)
  return found, len(seen)


def test_the_precision_walk_finds_a_default_product():
  x = jnp.ones((3, 3))
  below, total = _products_below_the_rule(
      lambda a: jax.lax.scan(lambda c, _: (c @ a, None), a, None, length=2)[0], x)
  assert len(below) == 1 and total == 1
  assert _products_below_the_rule(
      lambda a: jnp.matmul(a, a, precision=jax.lax.Precision.HIGHEST), x) == ([], 1)


def test_every_matrix_product_of_the_method_runs_at_the_precision_rule(key):
  """numerics.HIGHEST on every path: train (plain, both pools, corrections, sharded), the grouped
  CV, the auto step, model_scores and split_scores. (TF32 / bf16 products moved coefficients by
  2e-4 on an H100; CPU tests cannot see the difference, the jaxpr can.)"""
  import functools  # pylint: disable=g-import-not-at-top
  from qsg_jax.engine import auto_step, grouped, sharding  # pylint: disable=g-import-not-at-top
  data = _data(3, n_l=12, n_u=20)
  config = engine.EngineConfig(num_classes=3, num_steps=8, num_frequencies=3,
                               unlabeled_batch_size=4, chunk_size=4, block_group=2)
  hyper = _hyper(3)
  split = config.replace(split_corrections=True)
  split_hyper = hyper._replace(split_lam=jnp.float32(0.5))
  state = engine.init(key, data, config)
  split_state = engine.init(key, data, split)
  paths = {
      "train": (lambda s: engine.train(s, data, hyper, config, 8), state),
      "train cached": (lambda s: engine.train(s, data, hyper, config.replace(
          cache_unlabeled=True), 8), engine.init(key, data, config.replace(cache_unlabeled=True))),
      "train hinge": (lambda s: engine.train(s, data, hyper, config.replace(loss="hinge"), 8),
                      state),
      "corrections": (lambda s: engine.train(s, data, split_hyper, split, 8), split_state),
      "model_scores": (lambda s: engine.model_scores(engine.model_of(s, hyper), data.x_labeled,
                                                     2, 8), state),
      "split_scores": (lambda s: engine.split_scores(engine.model_of(s, split_hyper),
                                                     data.x_labeled, 2, 8), split_state),
      "auto step": (lambda x: auto_step.curvature(x, 0.5, jnp.ones((2, 12)) / 12,
                                                  jnp.ones((2, 12)) / 12, jnp.full(2, 0.5),
                                                  num_labeled=12), data.x_labeled),
  }
  mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("data",))
  sharded_jit = sharding._train_sharded_jit  # pylint: disable=protected-access
  paths["sharded"] = (functools.partial(sharded_jit, data=data, hyper=hyper, num_steps=8,
                                        mesh=mesh, config=config.replace(axis_name="data")), state)
  tasks = grouped.Tasks(jnp.full(2, 0.01), jnp.full((2, 2), 0.5), jnp.ones(2),
                        jnp.stack([state.pos_w] * 2), jnp.stack([state.neg_w] * 2),
                        jnp.ones((2, 12), bool))
  grouped_config = config.replace(labeled_batch_size=None, cache_unlabeled=True)
  paths["grouped CV"] = (lambda t: grouped.group_aucs(
      key, data, jnp.int32(data.x_unlabeled.shape[0]), jnp.float32(0.5), t,
      config=grouped_config, divergence_threshold=50.0), tasks)
  for name, (fn, arg) in paths.items():
    below, total = _products_below_the_rule(fn, arg)
    assert total >= 3 and not below, (name, total, below)


def _binary_auc(scores, y):
  pos, neg = scores[y == 1], scores[y == 0]
  return float(np.mean(pos[:, None] > neg[None, :]) + 0.5 * np.mean(pos[:, None] == neg[None, :]))


# [False]: slow (two more train compilations); [True] checks the same float32 boundary
# (numerics.as_float32 in init, train, model_scores and split_scores) with corrections on.
@pytest.mark.parametrize("corrections", [pytest.param(False, marks=pytest.mark.slow), True])
def test_engine_trains_under_x64_as_in_float32(corrections, key):
  """jax_enable_x64 on: the engine still computes in float32 (numerics.as_float32), so init,
  train, model_scores and split_scores give the float32 run's numbers from float64 inputs."""
  config = engine.EngineConfig(num_classes=3, split_corrections=corrections, **_SMALL_CONFIG)
  hyper = _hyper(3)._replace(split_lam=jnp.float32(0.3) if corrections else None)

  def run(data, hyper):
    state, metrics = _run(key, data, hyper, config)
    model = engine.model_of(state)
    scores = engine.model_scores(model, data.x_labeled, 4, 8)     # f alone
    if corrections:
      scores = jnp.concatenate([scores[:, None], engine.split_scores(model, data.x_labeled, 4, 8)],
                               axis=1)
    return state, metrics, scores

  state32, metrics32, scores32 = run(_data(3), hyper)
  with jax.enable_x64(True):
    data64 = jax.tree.map(lambda a: jnp.asarray(np.asarray(a, np.float64))
                          if a.dtype == np.float32 else a, _data(3))
    hyper64 = jax.tree.map(lambda a: jnp.asarray(np.asarray(a, np.float64)), hyper)
    state64, metrics64, scores64 = run(data64, hyper64)
    assert data64.x_labeled.dtype == jnp.float64 and state64.head_coef.dtype == jnp.float32
  for a, b in ((state32.head_coef, state64.head_coef), (metrics32["eta"], metrics64["eta"]),
               (scores32, scores64)):
    np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name, value", [("lam", -1.0), ("eta0", 0.0), ("eta0", np.inf),
                                         ("sigma", 0.0), ("gamma", 1.5), ("split_lam", 0.0),
                                         ("split_lam", np.nan)])
def test_invalid_traced_hyperparameters_give_nan_and_concrete_ones_raise(name, value, key):
  """train refuses concrete invalid values; its jitted program, which sees only traced values
  (as under jit or vmap), gives NaN for them. The program is called directly with the refused
  values: the config of test_engine_trains_under_x64_as_in_float32[True], whose compilation is
  reused (a vmap over [good, bad] compiled one more program)."""
  config = engine.EngineConfig(num_classes=3, split_corrections=True, **_SMALL_CONFIG)
  data = _data(3)
  good = _hyper(3)._replace(split_lam=jnp.float32(0.3))
  bad = good._replace(**{name: jnp.full(jnp.shape(getattr(good, name)), value, jnp.float32)})
  state = engine.init(key, data, config)
  with pytest.raises(ValueError, match=f"hyper.{name} must be"):
    engine.train(state, data, bad, config, 16)
  train_jit = engine.loop._train_jit  # pylint: disable=protected-access
  fine, _ = train_jit(state, data, good, config, 16)
  poisoned, _ = train_jit(state, data, bad, config, 16)
  assert np.all(np.isfinite(fine.head_coef)) and np.all(np.isnan(poisoned.head_coef))
  assert np.all(np.isnan(poisoned.f_labeled))


def test_huge_lam_keeps_the_ranking_and_a_fixed_step_past_one_is_refused(key):
  """lam = 1e10: the exact decay after step 0 is 1e-10 > 0; 1 - fl(eta_1) lam rounds to +-1e-7
  and once flipped f (AUC 0.21). A schedule with eta lam >= 1 after step 0 is refused, and gives
  NaN when lam is traced. The squared literal case's config (k = 3, nothing new to compile): the
  AUC of both splits y > j; with the decay computed as 1 - eta lam they were 0.05 and 0.08."""
  data = _data(3)
  config = engine.EngineConfig(num_classes=3, **_SMALL_CONFIG)
  y = np.asarray(data.y_labeled)
  normal, _ = _run(key, data, _hyper(3, lam=0.01), config)
  huge, _ = _run(key, data, _hyper(3, lam=1e10), config)
  for j in range(2):
    assert _binary_auc(np.asarray(huge.f_labeled), (y > j).astype(int)) > 0.75
    assert _binary_auc(np.asarray(normal.f_labeled), (y > j).astype(int)) > 0.75
  # The logistic literal case's schedule 2 / (t + 1) (binary data): eta_1 = 1, so lam = 1 gives
  # eta lam = 1 past step 0; its run with lam = 0.75 (eta lam = 0.75 past step 0) is finite.
  data = _data(2)
  state = engine.init(key, data, _SCHEDULE_CONFIG)
  refused = _hyper(2, lam=1.0, eta0=None)
  with pytest.raises(ValueError, match=r"eta lam = 1 >= 1 makes Eq. \(14\)'s decay"):
    engine.train(state, data, refused, _SCHEDULE_CONFIG, 24)
  # Traced (train's jitted program called directly sees no concrete lam, as under jit or vmap):
  # NaN, never a model with a flipped decay. The logistic case's compilation is reused.
  train_jit = engine.loop._train_jit  # pylint: disable=protected-access
  poisoned, _ = train_jit(state, data, refused, _SCHEDULE_CONFIG, 24)
  assert np.all(np.isnan(poisoned.scale * poisoned.coef))
  _, ok_hyper, _, ok_state, _ = _literal_run("binary_logistic_cached_unlabeled_schedule")
  assert float(ok_hyper.lam) * _theta_over_t(1) < 1.0
  assert np.all(np.isfinite(ok_state.scale * ok_state.coef))


def test_train_chunk_init_and_model_of_check_their_inputs(key):
  data = _data(3)
  config = engine.EngineConfig(num_classes=3, **_SMALL_CONFIG)
  state = engine.init(key, data, config)
  with pytest.raises(ValueError, match=r"hyper.lam must be finite and >= 0; received -1.0"):
    engine.train_chunk(state, data, _hyper(3, lam=-1.0), config)
  done, _ = engine.train(state, data, _hyper(3), config, 16)
  with pytest.raises(ValueError, match="has done 16 of config.num_steps=16 steps"):
    engine.train_chunk(done, data, _hyper(3), config)
  chunk, metrics = engine.train_chunk(state, data, _hyper(3), config)
  assert int(chunk.step) == 8 and metrics["eta"].shape == (8,)
  with pytest.raises(ValueError, match=r"num_unlabeled=301 does not fit data.x_unlabeled's 300 "
                     "rows"):
    engine.init(key, data, config, num_unlabeled=301)
  with pytest.raises(TypeError, match="num_unlabeled must be an int"):
    engine.init(key, data, config, num_unlabeled=3.5)
  sharded = config.replace(num_shards=4)
  layout = data._replace(x_unlabeled=engine.shard_unlabeled(data.x_unlabeled[:297], 4))  # 300
  one_device = engine.init(key, layout, sharded, num_unlabeled=297)
  with pytest.raises(ValueError, match="one-device train with num_shards=4 and n_u=297 expects "
                     "297: pass the unlabeled points themselves"):
    engine.train(one_device, layout, _hyper(3), sharded, 16)
  far = data._replace(x_unlabeled=data.x_unlabeled.at[3, 0].set(1e30))
  with pytest.raises(ValueError, match="data.x_unlabeled has a point of norm 1e.30"):
    engine.train(engine.init(key, far, config), far, _hyper(3), config, 16)
  # model_of takes sigma from the state; another sigma is refused, or poisoned when traced.
  assert float(engine.model_of(done).sigma) == 0.5
  with pytest.raises(ValueError, match=r"trained with sigma=0.5; received hyper.sigma=0.9"):
    engine.model_of(done, _hyper(3, sigma=0.9))
  with pytest.raises(ValueError, match=r"trained with sigma=0.5; received hyper.sigma=0.9"):
    engine.train(chunk, data, _hyper(3, sigma=0.9), config, 8)
  traced = jax.jit(lambda s, h: engine.model_of(s, h).sigma)(done, _hyper(3, sigma=0.9))
  assert np.isnan(traced)
  # train continues on the data init got: other labels, unlabeled rows or labeled rows were
  # ignored or trained silently (labels live in the state); a list is no hyper array.
  with pytest.raises(ValueError, match="data.y_labeled differs from the labels the state"):
    engine.train(state, data._replace(y_labeled=jnp.zeros_like(data.y_labeled)), _hyper(3),
                 config, 8)
  with pytest.raises(ValueError, match="data.x_unlabeled has 250 rows but the state was built "
                     "by init for n_u = 300"):
    engine.train(state, data._replace(x_unlabeled=data.x_unlabeled[:250]), _hyper(3), config, 8)
  n_l = data.x_labeled.shape[0]
  with pytest.raises(ValueError, match=f"data.x_labeled has {n_l - 3} rows but the state was "
                     f"built by init for {n_l}"):
    engine.train(state, data._replace(x_labeled=data.x_labeled[3:], y_labeled=data.y_labeled[3:]),
                 _hyper(3), config, 8)
  with pytest.raises(TypeError, match=r"hyper.gamma is a list; pass an array"):
    engine.train(state, data, _hyper(3)._replace(gamma=[0.5, 0.5]), config, 8)
  # No points, no scores (was a ZeroDivisionError inside the chunking).
  assert engine.model_scores(engine.model_of(done), jnp.zeros((0, 4))).shape == (0,)
