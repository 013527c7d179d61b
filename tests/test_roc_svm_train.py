"""The Optax loop (against SciPy's minimizer), its stopping rule, and the intercept rule."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy import optimize

from qsg_jax.roc_svm import objective
from qsg_jax.roc_svm import pairs as pairs_lib
from qsg_jax.roc_svm import synthetic
from qsg_jax.roc_svm import train


def _problem(key):
  """The padded design ``fit`` builds for 250 points of the linear model (51 positives).

  Shapes (64 positives, 256 negatives, 256 pairs, p = 2) and objective equal those of the
  model tests' squared-hinge fit, so every ``minimize`` call here shares one compilation.
  """
  x, y = synthetic.generate(jax.random.key(0), 250, "linear")
  x, y = np.asarray(x), np.asarray(y)
  x_pos, x_neg = x[y == 1], x[y == 0]
  pairs = pairs_lib.sample_pairs(key, len(x_pos), len(x_neg), 250)
  data = pairs_lib.make_pair_data(x_pos, x_neg, pairs)
  assert data.x_pos.shape == (64, 2) and data.x_neg.shape == (256, 2)
  return data


# One objective, optimizer and step budget for every test here: ``minimize`` compiles once.
OBJECTIVE = objective.Objective(loss="squared_hinge")
MAX_STEPS = 2000   # fit's default, like patience = 10


def _adamax():
  return train.default_optimizer(0.05)


def _minimize(data, lam, optimizer, tol):
  """``train.minimize`` with lam and tol as float32 arrays, exactly as ``fit`` passes them."""
  return train.minimize(OBJECTIVE, jnp.zeros(2), data, jnp.float32(lam), optimizer,
                        max_steps=MAX_STEPS, tol=jnp.float32(tol), patience=10)


def _numpy_squared_hinge_objective(data, lam):
  """The same objective over the real pairs in float64 NumPy, with its gradient, for SciPy."""
  real = np.asarray(data.pair_valid)
  diff = (np.asarray(data.x_pos, np.float64)[np.asarray(data.pairs.positive)[real]]
          - np.asarray(data.x_neg, np.float64)[np.asarray(data.pairs.negative)[real]])

  def fun(beta):
    slack = np.maximum(0.0, 1.0 - diff @ beta)
    value = np.mean(np.square(slack)) + 0.5 * lam * beta @ beta
    grad = -2.0 * (diff * slack[:, None]).mean(0) + lam * beta
    return value, grad
  return fun


def test_adamax_and_an_extra_args_optimizer_reach_the_scipy_minimizer(key):
  data = _problem(key)
  lam = 0.05
  ref = optimize.minimize(_numpy_squared_hinge_objective(data, lam), np.zeros(2), jac=True,
                          method="L-BFGS-B", options={"gtol": 1e-10})
  result = _minimize(data, lam, _adamax(), 1e-9)
  np.testing.assert_allclose(result.params, ref.x, atol=2e-3)
  np.testing.assert_allclose(result.value, ref.fun, rtol=1e-5)
  # Any GradientTransformation works, including ones that need the objective's value:
  # Polyak's step (f - f*) / ||g||^2 with f* known converges to the same minimizer.
  polyak = optax.polyak_sgd(max_learning_rate=10.0, f_min=float(ref.fun))
  assert isinstance(polyak, optax.GradientTransformationExtraArgs)
  result = _minimize(data, lam, polyak, 1e-7)
  np.testing.assert_allclose(result.params, ref.x, atol=2e-3)


def test_stopping_rule_trace_and_no_recompilation(key):
  data = _problem(key)
  result = _minimize(data, 1e-2, _adamax(), 1e-6)
  steps = int(result.num_steps)
  assert bool(result.converged) and steps < MAX_STEPS
  values = np.asarray(result.values)
  assert np.all(np.isfinite(values[:steps])) and np.all(values[steps:] == np.inf)
  change = np.abs(np.diff(values[:steps])) / np.abs(values[:steps - 1])
  assert np.all(change[-10:] < 1e-6) and not np.all(change[-11:] < 1e-6)
  assert values[steps - 1] < values[0]
  # With tol = 0 no step is calm: the loop runs to max_steps without claiming convergence.
  size = train.minimize._cache_size()
  capped = _minimize(data, 1e-2, _adamax(), 0.0)
  assert int(capped.num_steps) == MAX_STEPS and not bool(capped.converged)
  # A new lambda, tolerance or an equal objective does not recompile.
  train.minimize(objective.Objective(loss="squared_hinge"), jnp.zeros(2), data, jnp.float32(0.5),
                 _adamax(), max_steps=MAX_STEPS, tol=jnp.float32(1e-4), patience=10)
  assert train.minimize._cache_size() == size


def test_a_non_finite_objective_stops_the_loop(key):
  data = _problem(key)
  huge = data._replace(x_pos=data.x_pos * 1e22, x_neg=data.x_neg * 1e22)   # squares overflow
  result = _minimize(huge, 0.0, _adamax(), 1e-6)
  assert not np.isfinite(float(result.value)) and int(result.num_steps) < 10


def test_jit_matches_a_python_loop_of_optax_steps(key):
  data = _problem(key)
  result = _minimize(data, 0.1, _adamax(), 1e-6)
  steps = int(result.num_steps)
  opt = _adamax()

  @jax.jit
  def step(params, state):
    value, grads = jax.value_and_grad(OBJECTIVE)(params, data, 0.1)
    updates, state = opt.update(grads, state, params)
    return optax.apply_updates(params, updates), state, value

  params, state, values = jnp.zeros(2), opt.init(jnp.zeros(2)), []
  for _ in range(steps):
    evaluated = params
    params, state, value = step(params, state)
    values.append(float(value))
  np.testing.assert_allclose(np.asarray(result.values)[:steps], values, rtol=1e-5)
  # The result is the last evaluated iterate, with its objective.
  np.testing.assert_allclose(result.params, evaluated, rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(result.value, values[-1], rtol=1e-6)


@pytest.mark.parametrize("target", [0.5, 0.8, 0.9, 0.95, 1.0])
def test_intercept_meets_the_target_rate_tightly(target):
  rng = np.random.default_rng(0)
  scores = np.round(rng.normal(size=400), 1)          # many ties
  labels = (rng.random(400) < 0.3).astype(int)
  for rate in ("sensitivity", "specificity"):
    alpha = train.intercept_for_rate(scores, labels, target, rate)
    predicted = scores + alpha > 0
    group = labels > 0 if rate == "sensitivity" else labels <= 0
    correct = predicted[group] if rate == "sensitivity" else ~predicted[group]
    assert correct.mean() >= target
    # Tight: a threshold past the nearest group score on the strict side breaks the target.
    values = np.unique(scores[group])
    t = -alpha
    if rate == "sensitivity":
      v = values[values > t][0]                    # lowest score still predicted positive
      assert (scores[group] > v).mean() < target
    else:
      below = values[values < t]                   # below[-1]: highest score predicted negative
      if below.size > 1:
        assert (scores[group] <= below[-2]).mean() < target


def test_intercept_errors():
  with pytest.raises(ValueError, match="must lie in \\(0, 1\\]"):
    train.intercept_for_rate([0.1, 0.2], [0, 1], 0.0)
  with pytest.raises(ValueError, match="'sensitivity' or 'specificity'"):
    train.intercept_for_rate([0.1, 0.2], [0, 1], 0.5, "recall")
  with pytest.raises(ValueError, match="needs positive points"):
    train.intercept_for_rate([0.1, 0.2], [0, 0], 0.5)
  with pytest.raises(ValueError, match="same shape"):
    train.intercept_for_rate([0.1, 0.2], [0, 1, 1], 0.5)


def test_intercept_for_rate_refuses_nan_scores_and_non_binary_labels():
  scores, labels = np.array([0.1, 0.4, np.nan, 0.9]), np.array([0, 0, 1, 1])
  with pytest.raises(ValueError, match="scores contain 1 NaN or infinite values \\(first at row 2"):
    train.intercept_for_rate(scores, labels, 0.9)
  with pytest.raises(ValueError, match="binary labels must be 0/1"):
    train.intercept_for_rate(np.arange(4.0), np.array([0, 1, 2, 1]), 0.9)
