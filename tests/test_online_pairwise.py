"""Online pairwise least squares: incremental vs literal vs NumPy Eq. (1), Lemma 1, streaming."""

import doctest
import re

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
import scipy.sparse as sp
import scipy.spatial.distance

from qsg_jax import metrics
from qsg_jax import online_pairwise as op
from qsg_jax.online_pairwise import streaming
from qsg_jax.online_pairwise.estimator import pairwise_ranking_accuracy
from qsg_jax.errors import DivergenceError
from tests import _bad_inputs as toy
from tests.conftest import raises_short


def _numpy_eq1(x, y, step_size):
  """Eq. (1) exactly as printed: w_1 = w_2 = 0, a Python sum over j < t. Returns w_2..w_{T+1}."""
  w = np.zeros(x.shape[1])
  out = []
  for t in range(1, x.shape[0] + 1):
    if t >= 2:
      grad = sum((w @ (x[t - 1] - x[j]) - y[t - 1] + y[j]) * (x[t - 1] - x[j])
                 for j in range(t - 1)) / (t - 1)
      w = w - float(step_size(t)) * grad
    out.append(w)
  return np.asarray(out)


def _record_w(state):
  return state.w


def _data(n, d, seed=0):
  rng = np.random.default_rng(seed)
  return rng.standard_normal((n, d)) + 0.5, rng.standard_normal(n)


SCHEDULES = {
    "polynomial": op.polynomial_step_size(0.75, 4.0),
    "optax": optax.linear_schedule(0.3, 0.05, transition_steps=30),
}


# Each schedule and each shape once (the remaining two products of the grid ran the same code on
# two more pairs of compiled scans).
@pytest.mark.parametrize("schedule,dim,num", [("polynomial", 1, 12), ("optax", 3, 40)])
def test_incremental_equals_literal_equals_numpy(dim, num, schedule):
  step_size = SCHEDULES[schedule]
  x, y = _data(num, dim)
  with jax.enable_x64(True):
    inc, w_inc = op.run(op.init(dim, jnp.float64), x, y, step_size, metrics_fn=_record_w)
    lit, w_lit = op.run(op.init_literal(dim, num, jnp.float64), x, y, step_size,
                        metrics_fn=_record_w)
    assert w_inc.dtype == jnp.float64
    expected = _numpy_eq1(x, y, step_size)   # step sizes evaluated in float64 too
    gamma_2 = float(step_size(2))
  np.testing.assert_allclose(w_lit, expected, rtol=1e-11, atol=1e-13)
  np.testing.assert_allclose(w_inc, expected, rtol=1e-11, atol=1e-13)
  # t = 1 and t = 2 by hand: w_2 = 0, w_3 = gamma_2 (y_2 - y_1)(x_2 - x_1).
  np.testing.assert_array_equal(w_inc[0], np.zeros(dim))
  np.testing.assert_allclose(w_inc[1], gamma_2 * (y[1] - y[0]) * (x[1] - x[0]), rtol=1e-12)
  assert int(inc.step) == int(lit.step) == num
  assert np.abs(expected[-1]).max() > 1e-2  # the run moved


def test_gradients_are_grad_of_local_empirical_error():
  x, y = _data(9, 4, seed=1)
  w = np.random.default_rng(2).standard_normal(4)
  with jax.enable_x64(True):
    inc, _ = op.run(op.init(4, jnp.float64), x[:8], y[:8], SCHEDULES["polynomial"])
    lit, _ = op.run(op.init_literal(4, 9, jnp.float64), x[:8], y[:8], SCHEDULES["polynomial"])
    inc, lit = inc._replace(w=jnp.asarray(w)), lit._replace(w=jnp.asarray(w))

    def local_error(w):  # 1/(2(t-1)) sum_{j<t} (y_t - y_j - w^T (x_t - x_j))^2, t = 9
      return jnp.sum((y[8] - y[:8] - (x[8][None, :] - x[:8]) @ w) ** 2) / 16.0

    expected = jax.jit(jax.grad(local_error))(jnp.asarray(w))   # one program, not one per op
    np.testing.assert_allclose(op.gradient(inc, x[8], y[8]), expected, rtol=1e-12)
    np.testing.assert_allclose(op.literal_gradient(lit, x[8], y[8]), expected, rtol=1e-12)


def test_running_moments_hold_the_running_sums():
  x, y = _data(30, 3, seed=3)
  with jax.enable_x64(True):
    s, _ = op.run(op.init(3, jnp.float64), x, y, SCHEDULES["polynomial"])
    s = jax.tree.map(np.asarray, s)
  n, m = 30, s.mean_x
  np.testing.assert_allclose(n * m, x.sum(0), rtol=1e-12)
  np.testing.assert_allclose(n * s.mean_y, y.sum(), rtol=1e-12)
  np.testing.assert_allclose(n * (s.cov_xx + np.outer(m, m)), x.T @ x, rtol=1e-12)
  np.testing.assert_allclose(n * (s.cov_yx + s.mean_y * m), y @ x, rtol=1e-12)


def test_float32_stream_tracks_float64_over_long_runs(key):
  # Offset data (mean 30, spread 1): raw running sums of x x^T would cancel badly in float32.
  problem = op.make_linear_problem(0, 4, 3, noise=0.5)
  problem = problem._replace(offset=problem.offset + 30.0)
  x, y = op.sample_linear(problem, key, 20000)
  x, y = np.asarray(x), np.asarray(y)
  step_size = op.polynomial_step_size(0.75, problem.mu)
  w32 = op.fit_stream([(x, y)], step_size=step_size).state.w
  with jax.enable_x64(True):
    w64 = op.fit_stream([(x, y)], step_size=step_size, dtype=jnp.float64).state.w
  assert w32.dtype == jnp.float32
  np.testing.assert_allclose(w32, w64, atol=2e-5 * np.linalg.norm(w64))  # raw sums: ~3e-3


def test_lemma1_iterates_stay_orthogonal_to_the_null_space(key):
  problem = op.make_linear_problem(1, 4, 2, noise=1.0, null_norm=2.0)
  null = problem.null_basis
  with jax.enable_x64(True):
    # The first 3000 of a 40000-point draw: the sampler test_estimate_mu_and_closed_forms_of_
    # the_synthetic_problem compiles (the same shapes; the problem's values are traced).
    x, y = (a[:3000] for a in op.sample_linear(problem, key, 40000))
    out = op.fit_stream([(x, y)], step_size=op.polynomial_step_size(0.6, problem.mu),
                        metrics_fn=_record_w, dtype=jnp.float64)
  assert np.min(np.linalg.norm(np.asarray(x) @ null, axis=1)) > 0.05   # x itself is not
  assert np.max(np.linalg.norm(out.metrics @ null, axis=1)) < 1e-12
  # So w_T approaches the minimum-norm minimizer w*, never w_true (which has ||P_V0|| = 2).
  w = np.asarray(out.state.w)
  assert np.sum((w - problem.w_star) ** 2) < 0.05
  np.testing.assert_allclose(np.sum((w - problem.w_true) ** 2), 4.0, atol=0.1)


def test_stream_chunking_is_invisible_and_compiles_once():
  x, y = _data(23, 2, seed=4)
  x, y = x.astype(np.float32), y.astype(np.float32)
  step_size = op.polynomial_step_size(0.75, 4.0)
  _, expected = op.run(op.init(2), x, y, step_size, metrics_fn=_record_w)
  ragged = [(x[:5], y[:5]), (x[5:7], y[5:7]), (x[7:7], y[7:7]), (x[7:], y[7:])]
  before = streaming._run_chunk._cache_size()
  first = op.fit_stream(iter(ragged), step_size=step_size, metrics_fn=_record_w)
  by_index = op.fit_stream(lambda i: (x[4 * i:4 * i + 4], y[4 * i:4 * i + 4]), num_chunks=6,
                           step_size=step_size, chunk_size=5, metrics_fn=_record_w)
  assert streaming._run_chunk._cache_size() - before == 1   # padded pieces, one compilation
  np.testing.assert_allclose(first.metrics, expected, rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(by_index.metrics, expected, rtol=1e-6, atol=1e-7)
  # Continuing from a state equals one longer stream.
  half = op.fit_stream([(x[:11], y[:11])], step_size=step_size, chunk_size=5)
  rest = op.fit_stream([(x[11:], y[11:])], state=half.state, step_size=step_size, chunk_size=5)
  np.testing.assert_allclose(rest.state.w, expected[-1], rtol=1e-6, atol=1e-7)


def test_a_huge_chunk_size_pads_to_a_power_of_two_not_to_chunk_size():
  """chunk_size=10**9 padded every piece to 10**9 rows (killed for memory): now the next power
  of two once the padded block would pass 2**24 numbers, with the same iterate."""
  x, y = _data(23, 2, seed=4)
  x, y = x.astype(np.float32), y.astype(np.float32)
  step_size = op.polynomial_step_size(0.75, 4.0)
  _, expected = op.run(op.init(2), x, y, step_size, metrics_fn=_record_w)
  huge = op.fit_stream([(x[:20], y[:20]), (x[20:], y[20:])], step_size=step_size,
                       chunk_size=10**9, metrics_fn=_record_w)
  np.testing.assert_allclose(huge.metrics, expected, rtol=1e-6, atol=1e-7)
  assert [streaming._padded_length(10**9, n, 2) for n in (20, 3, 1)] == [32, 4, 1]
  assert streaming._padded_length(256, 3, 2) == 256     # small: chunk_size, one compilation
  ranker = op.OnlinePairwiseRanker(chunk_size=10**9).fit(x, y)
  np.testing.assert_allclose(ranker.coef_, op.OnlinePairwiseRanker(chunk_size=23).fit(x, y).coef_,
                             rtol=1e-6, atol=1e-7)


def test_vmap_over_streams_matches_a_loop():
  xs = np.stack([_data(15, 3, seed=s)[0] for s in range(3)]).astype(np.float32)
  ys = np.stack([_data(15, 3, seed=s)[1] for s in range(3)]).astype(np.float32)
  step_size = op.polynomial_step_size(0.9, 5.0)
  states = jax.vmap(lambda _: op.init(3))(jnp.arange(3))
  batched, _ = jax.jit(jax.vmap(lambda s, x, y: op.run(s, x, y, step_size)))(states, xs, ys)
  for i in range(3):
    single, _ = op.run(op.init(3), xs[i], ys[i], step_size)
    np.testing.assert_allclose(batched.w[i], single.w, rtol=1e-5, atol=1e-7)


def test_estimate_mu_and_closed_forms_of_the_synthetic_problem(key):
  problem = op.make_linear_problem(2, 4, 2, noise=0.5)
  with jax.enable_x64(True):
    x, y = op.sample_linear(problem, key, 40000)
  x, y = np.asarray(x), np.asarray(y)
  # C_rho = 2 Cov(x), and w* solves the normal equations C_rho w = S_rho = 2 Cov(x, y).
  c_rho = 2.0 * problem.basis @ np.diag(problem.scales ** 2) @ problem.basis.T
  cov = np.cov(np.column_stack([x, y]), rowvar=False)
  np.testing.assert_allclose(2.0 * cov[:4, :4], c_rho, atol=0.05)
  np.testing.assert_allclose(c_rho @ problem.w_star, 2.0 * cov[:4, 4], atol=0.05)
  np.testing.assert_allclose(problem.null_basis.T @ problem.w_star, 0.0, atol=1e-12)
  # estimate_mu: brute force on a sample, and close below the population lambda + kappa^2.
  sample = x[:500]
  eig = np.linalg.eigvalsh(2.0 * np.cov(sample, rowvar=False))
  brute = eig[eig > 1e-8 * eig.max()].min() + scipy.spatial.distance.pdist(sample).max() ** 2
  np.testing.assert_allclose(op.estimate_mu(sample), brute, rtol=1e-9)
  assert 0.95 * problem.mu < op.estimate_mu(x[:3000]) <= problem.mu * (1 + 1e-9)


def test_bipartite_ranking_reaches_the_optimal_auc(key):
  problem = op.make_bipartite_problem(0, 5, separation=1.5, positive_rate=0.3)
  key_train, key_test = jax.random.split(key)
  x_test, y_test = op.sample_bipartite(problem, key_test, 20000)   # the training draw's program
  assert set(np.unique(y_test).tolist()) == {0.0, 1.0}
  x_test, y_test = np.asarray(x_test), np.asarray(y_test)
  auc_fn = metrics.binary_auc   # on the host (NumPy arrays): nothing to compile for 20000 scores
  auc_star = float(auc_fn(x_test @ problem.w_star.astype(np.float32), y_test))
  assert abs(auc_star - problem.optimal_auc) < 0.01   # closed form Phi(D / sqrt 2)
  x, y = op.sample_bipartite(problem, key_train, 20000)
  out = op.fit_stream([(x, y)], theta=0.6)   # mu estimated on the first chunk
  assert out.step_size.mu == pytest.approx(op.estimate_mu(np.asarray(x)[:2048]), rel=1e-6)
  auc = float(auc_fn(x_test @ np.asarray(out.state.w), y_test))
  assert auc > problem.optimal_auc - 0.01


def test_docstring_example_runs():
  globs = {"init": op.init, "polynomial_step_size": op.polynomial_step_size, "jnp": jnp,
           "run": op.run}
  runner = doctest.DocTestRunner()
  for test in doctest.DocTestFinder().find(streaming.run, "run", globs=globs):
    runner.run(test)
  assert runner.summarize(verbose=False) == doctest.TestResults(failed=0, attempted=3)


def test_literal_form_past_capacity_is_nan_not_silent():
  state = op.init_literal(2, 1)
  state = op.update_literal(state, jnp.ones(2), 1.0, SCHEDULES["polynomial"])
  assert np.isfinite(state.w).all()
  state = op.update_literal(state, jnp.zeros(2), 0.0, SCHEDULES["polynomial"])
  assert np.isnan(state.w).all()


_X, _Y = _data(6, 2)


def _chunks(*pairs):
  return list(pairs)


ERRORS = {
    "theta": (lambda: op.polynomial_step_size(1.5, 1.0), ValueError, "theta must be in"),
    "mu": (lambda: op.polynomial_step_size(0.75, 0.0), ValueError, "mu must be a positive"),
    "mu_nan": (lambda: op.polynomial_step_size(0.75, float("nan")), ValueError, "mu must be"),
    "dim": (lambda: op.init(0), ValueError, "dim must be a positive integer"),
    "capacity": (lambda: op.init_literal(2, 0), ValueError, "capacity must be a positive"),
    "dtype_int": (lambda: op.init(2, jnp.int32), TypeError, "dtype must be a float dtype"),
    "dtype_x64": (lambda: op.fit_stream([(_X, _Y)], mu=1.0, dtype=jnp.float64), ValueError,
                  "needs 64-bit JAX"),
    "x_t_shape": (lambda: op.update(op.init(2), jnp.ones(3), 1.0, SCHEDULES["polynomial"]),
                  ValueError, r"x_t must be one example of shape \(2,\)"),
    "y_t_shape": (lambda: op.update(op.init(2), jnp.ones(2), jnp.ones(2),
                                    SCHEDULES["polynomial"]), ValueError, "y_t must be a scalar"),
    "step_not_callable": (lambda: op.update(op.init(2), jnp.ones(2), 1.0, 0.1), TypeError,
                          "step_size must be a callable"),
    "run_xs": (lambda: op.run(op.init(3), _X, _Y, SCHEDULES["polynomial"]), ValueError,
               r"xs must have shape \[c, 3\]"),
    "run_ys": (lambda: op.run(op.init(2), _X, _Y[:4], SCHEDULES["polynomial"]), ValueError,
               r"ys must have shape \[6\]"),
    "run_state": (lambda: op.run((1, 2), _X, _Y, SCHEDULES["polynomial"]), TypeError,
                  "state must be an IncrementalState"),
    "chunk_rank": (lambda: op.fit_stream([(_X[0], _Y[:1])], mu=1.0), ValueError,
                   r"chunk 0: x must have shape \[c, d\]"),
    "chunk_dim": (lambda: op.fit_stream(_chunks((_X, _Y), (_X[:, :1], _Y)), mu=1.0), ValueError,
                  "chunk 1: x has 1 features but the stream has d = 2"),
    "chunk_y": (lambda: op.fit_stream([(_X, _Y[:5])], mu=1.0), ValueError,
                r"chunk 0: y must have shape \[6\]"),
    "chunk_nan": (lambda: op.fit_stream([(np.where(np.eye(6, 2) > 0, np.nan, _X), _Y)], mu=1.0),
                  ValueError, "chunk 0 has 2 examples with NaN"),
    "chunk_dtype": (lambda: op.fit_stream([(_X.astype(str), _Y)], mu=1.0), TypeError,
                    "x must be real numbers"),
    "chunk_fn_needs_count": (lambda: op.fit_stream(lambda i: (_X, _Y), mu=1.0), ValueError,
                             "pass num_chunks too"),
    "not_iterable": (lambda: op.fit_stream(3, mu=1.0), TypeError, "chunks must be an iterable"),
    "literal_capacity": (lambda: op.fit_stream([(_X, _Y)], mu=1.0, form="literal"), ValueError,
                         "pass capacity"),
    "literal_overflow": (lambda: op.fit_stream([(_X, _Y)], mu=1.0, form="literal", capacity=4),
                         ValueError, "past its capacity of 4 examples"),
    "form": (lambda: op.fit_stream([(_X, _Y)], mu=1.0, form="fast"), ValueError,
             "form must be one of"),
    "form_vs_state": (lambda: op.fit_stream([(_X, _Y)], mu=1.0, state=op.init(2),
                                            form="literal"), ValueError, "incremental form"),
    "stream_step": (lambda: op.fit_stream([(_X, _Y)], step_size=0.1), TypeError,
                    "step_size must be a callable"),
    "chunk_size": (lambda: op.fit_stream([(_X, _Y)], mu=1.0, chunk_size=0), ValueError,
                   "chunk_size must be a whole number >= 1"),
    "empty": (lambda: op.fit_stream([], mu=1.0), ValueError, "the stream was empty"),
    "mu_from_one_example": (lambda: op.fit_stream([(_X[:1], _Y[:1])]), ValueError,
                            "needs >= 2 examples"),
    "diverges": (lambda: op.fit_stream([_data(40, 2)], mu=1e-3), DivergenceError,
                 "Theorem 1 needs gamma_t"),
    "estimate_mu_shape": (lambda: op.estimate_mu(_X[:1]), ValueError, "n >= 2"),
    "estimate_mu_constant": (lambda: op.estimate_mu(np.ones((4, 2))), ValueError,
                             "every point of the sample is the same"),
    "rank": (lambda: op.make_linear_problem(0, 3, 4), ValueError, "rank must be in 1..dim"),
    "scale": (lambda: op.make_linear_problem(0, 3, 2, scale=0.0), ValueError,
              "scale must be positive"),
    "noise": (lambda: op.make_linear_problem(0, 3, 2, noise=-1.0), ValueError,
              "noise must be finite and >= 0"),
    "positive_rate": (lambda: op.make_bipartite_problem(0, 3, positive_rate=1.0), ValueError,
                      "positive_rate must be in"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_say_what_and_how_to_fix(case):
  fn, error, match = ERRORS[case]
  with pytest.raises(error, match=match):
    fn()


def test_mean_square_prediction_and_slope_fit_closed_forms():
  from experiments import online_pairwise_rate as rate  # pylint: disable=g-import-not-at-top
  problem = op.make_linear_problem(0, 3, 2, noise=0.0)
  step_size = op.polynomial_step_size(0.75, problem.mu)
  predicted = rate.mean_square_prediction(problem, step_size, 50)
  # Noise free: E_{t+1} = (1 - 4 gamma_t + 5 gamma_t^2) E_t from E_2 = ||w*||^2 (s = 1, r = 2).
  gamma = np.asarray([float(step_size(t)) for t in range(2, 51)])
  expected = np.concatenate([[1.0], np.cumprod(1.0 - 4.0 * gamma + 5.0 * gamma ** 2)])
  np.testing.assert_allclose(predicted, expected * float(problem.w_star @ problem.w_star),
                             rtol=1e-6)
  steps = np.arange(1, 101)
  assert rate.fit_slope(steps, 3.0 * steps ** -0.4, fit_from=10) == pytest.approx(-0.4)
  with pytest.raises(ValueError, match="fewer than 2 checkpoints"):
    rate.fit_slope(steps, steps ** -0.4, fit_from=1000)
  # Sweep Z1: the script ran a whole theta, then died in fit_slope with a traceback.
  from experiments.common import cli  # pylint: disable=g-import-not-at-top
  with pytest.raises(cli.UserError, match=r"--fit_from=1000 leaves fewer than 2 of the "
                     r"checkpoints .* lower --fit_from to at most \d+"):
    rate.Settings(num_steps=100, fit_from=1000)


@pytest.mark.slow   # reproduction smoke run (experiments.online_pairwise_rate): `make test-slow`
def test_rate_experiment_smoke(tmp_path):
  from experiments import online_pairwise_rate as rate  # pylint: disable=g-import-not-at-top
  out = rate.run_all(output_dir=tmp_path, thetas=(0.6,), num_steps=2000, num_repeats=2, dim=4,
                     rank=2, chunk_size=1000, fit_from=200, bipartite_steps=1000,
                     bipartite_dim=3, test_size=500, float64=True)
  for name in ("online_pairwise_rate.json", "online_pairwise_rate.md", "online_pairwise_rate.png",
               "online_pairwise_auc.md", "online_pairwise_auc.csv"):
    assert (tmp_path / name).is_file(), name
  (res,) = out["results"]
  assert res["theorem_slope"] == pytest.approx(-0.2)
  assert res["mean_curve"][-1] < 0.1 * res["mean_curve"][0]   # it converges
  assert np.isfinite(res["slope"]) and res["slope"] < 0
  assert res["max_null_component"] < 1e-10                    # Lemma 1
  assert "| 0.6000 |" in (tmp_path / "online_pairwise_rate.md").read_text()
  aucs = [r["test_auc"] for r in out["bipartite"]["rows"]]
  assert len(aucs) == 2 and all(0.5 < a <= 1.0 for a in aucs)   # T = 100 and T = 1000


@pytest.mark.slow   # benchmark smoke run (experiments.bench_online_pairwise): `make test-slow`
def test_benchmark_smoke(tmp_path):
  from experiments import bench_online_pairwise as bench  # pylint: disable=g-import-not-at-top
  res = bench.run_all(output_dir=tmp_path, dim=3, at_step=50, measure_steps=50,
                      stream_steps=200, chunk_size=100, repeats=1)
  assert (tmp_path / "bench_online_pairwise.json").is_file()
  assert res["literal_us_per_step"] > 0 and res["incremental_us_per_step"] > 0
  assert res["relative_difference_of_w"] < 1e-4   # both forms reach the same iterate
  assert np.isfinite(res["stream_sq_error_to_w_star"])


# --- The estimator: dtypes, scaling, schedule changes, blame (issue 28, issue 29 item 6) --------


def _ranking_data(n, seed=0, scale=1.0, offset=0.0):
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(n, 3))
  y = (x[:, 0] + x[:, 1] + 0.5 * rng.normal(size=n) > 0).astype(int)
  return x * scale + offset, y


@pytest.mark.parametrize("kind", ["int", "bool", "float16", "Int64", "Float64", "boolean"])
def test_ranker_computes_every_input_dtype_in_float(kind):
  """Integer and bool features used to score as constants (weights cast to the input's dtype)."""
  import pandas as pd   # pylint: disable=g-import-not-at-top
  x, y = _ranking_data(300)
  x_test, y_test = _ranking_data(400, seed=1)
  cast = {"int": lambda a: np.round(3 * a).astype(np.int64),
          "bool": lambda a: a > 0,
          "float16": lambda a: a.astype(np.float16),
          "Int64": lambda a: pd.DataFrame(np.round(3 * a)).astype("Int64"),
          "Float64": lambda a: pd.DataFrame(a).astype("Float64"),
          "boolean": lambda a: pd.DataFrame(a > 0).astype("boolean")}[kind]
  as_float = lambda a: pd.DataFrame(cast(a)).to_numpy(dtype=np.float64)
  ranker = op.OnlinePairwiseRanker(chunk_size=64).fit(cast(x), y)
  reference = op.OnlinePairwiseRanker(chunk_size=64).fit(as_float(x), y)
  scores = ranker.decision_function(cast(x_test))
  assert scores.dtype == np.float64
  np.testing.assert_allclose(scores, reference.decision_function(as_float(x_test)), rtol=1e-12)
  assert ranker.score(cast(x_test), y_test) == pytest.approx(
      float(metrics.binary_auc(reference.decision_function(as_float(x_test)), y_test)), abs=1e-6)
  assert len(np.unique(scores)) > 1                      # not a constant
  if kind == "Float64":
    missing = cast(x)
    missing.iloc[3, 1] = pd.NA
    with pytest.raises(ValueError, match="X contains NaN or inf: 1 rows, the first at row 3"):
      op.OnlinePairwiseRanker().fit(missing, y)


def test_ranker_scales_its_inputs_like_every_estimator():
  x, y = _ranking_data(600, scale=np.array([1e3, 1.0, 1e-2]), offset=5e3)
  x_test, y_test = _ranking_data(1000, seed=1, scale=np.array([1e3, 1.0, 1e-2]), offset=5e3)
  ranker = op.OnlinePairwiseRanker(chunk_size=64).fit(x, y)
  lo, scale = _minmax(x)
  np.testing.assert_array_equal(ranker.input_min_, lo)
  np.testing.assert_array_equal(ranker.input_scale_, scale)
  by_hand = op.OnlinePairwiseRanker(chunk_size=64, scale_inputs=False).fit((x - lo) / scale, y)
  np.testing.assert_allclose(ranker.decision_function(x_test),
                             by_hand.decision_function((x_test - lo) / scale), rtol=1e-12)
  unscaled = op.OnlinePairwiseRanker(chunk_size=64, scale_inputs=False).fit(x, y)
  assert ranker.score(x_test, y_test) > unscaled.score(x_test, y_test) + 0.1
  assert ranker.score(x_test, y_test) > 0.9
  # partial_fit fits the map on its first chunk and keeps it for the stream.
  stream = op.OnlinePairwiseRanker(chunk_size=64).partial_fit(x[:200], y[:200])
  first_map = stream.input_min_.copy()
  stream.partial_fit(x[200:], y[200:])
  np.testing.assert_array_equal(stream.input_min_, first_map)
  with pytest.raises(ValueError, match="scale_inputs changed to False since the first"):
    stream.set_params(scale_inputs=False).partial_fit(x[:10], y[:10])
  with pytest.raises(TypeError, match="scale_inputs must be True or False; received 1"):
    op.OnlinePairwiseRanker(scale_inputs=1).fit(x, y)


def _minmax(x):
  lo = x.min(axis=0)
  return lo, x.max(axis=0) - lo


def test_set_params_between_partial_fit_calls_changes_the_schedule():
  x, y = _ranking_data(200)
  for change in ({"mu": 50.0}, {"theta": 0.6}, {"mu": None}):
    ranker = op.OnlinePairwiseRanker(mu=5.0, chunk_size=64, scale_inputs=False)
    ranker.partial_fit(x[:80], y[:80]).set_params(**change).partial_fit(x[80:], y[80:])
    first = op.fit_stream([(x[:80], y[:80])], mu=5.0, chunk_size=64)
    params = {"theta": 0.75, "mu": 5.0, **{k: v for k, v in change.items() if v is not None}}
    schedule = op.polynomial_step_size(params["theta"], params["mu"])
    rest = op.fit_stream([(x[80:], y[80:])], state=first.state, step_size=schedule,
                         chunk_size=64)
    np.testing.assert_allclose(ranker.coef_, np.asarray(rest.state.w), rtol=1e-6)
    assert ranker.step_size_ == schedule


def test_fit_stream_continuation_needs_its_schedule():
  x, y = _ranking_data(100)
  first = op.fit_stream([(x[:50], y[:50])], chunk_size=32)
  with pytest.raises(ValueError, match="continues from a state but was given no schedule"):
    op.fit_stream([(x[50:], y[50:])], state=first.state, chunk_size=32)
  again = op.fit_stream([(x[50:], y[50:])], state=first.state, step_size=first.step_size,
                        chunk_size=32)
  whole = op.fit_stream([(x[:50], y[:50]), (x[50:], y[50:])], chunk_size=32)
  np.testing.assert_allclose(np.asarray(again.state.w), np.asarray(whole.state.w), rtol=1e-5)


def test_huge_and_tiny_values_blame_the_real_cause():
  x, y = _ranking_data(100)
  with pytest.raises(ValueError, match="x has values up to \\|x\\| = .*e\\+20 .* products in the "
                     "O\\(d\\^2\\) update .* exceed the float32 range"):
    op.fit_stream([(x * 1e20, y)])
  with pytest.raises(ValueError, match=r"y has values up to.*Rescale y: a positive factor keeps "
                     r"the ranking .*, or pass dtype=float64 to fit_stream"):
    op.fit_stream([(x, y * 1e25)])
  with pytest.raises(ValueError, match=r"Rescale y: a positive factor keeps the ranking"):
    op.OnlinePairwiseRanker().fit(x, y * 1e30)       # the estimator has no dtype: advice it can use
  with pytest.raises(ValueError, match=r"first partial_fit chunk has n_samples = 1; it needs at "
                     r"least 2 rows to estimate mu .* or set mu"):
    op.OnlinePairwiseRanker().partial_fit(x[:1], y[:1])
  op.OnlinePairwiseRanker(mu=1.0).partial_fit(x[:1], y[:1])   # with mu given, one row is a chunk
  with pytest.raises(TypeError, match=r"chunk 0 must be a pair \(x \[c, d\], y \[c\]\); received "
                     r"ndarray of shape \(100, 3\)"):
    op.fit_stream([x])
  with pytest.warns(UserWarning, match=r"num_chunks=5 but the stream ended after 2 chunks"):
    op.fit_stream([(x[:50], y[:50]), (x[50:], y[50:])], num_chunks=5)
  with pytest.raises(ValueError, match=r"rtol must be a number in \[0, 1\)"):
    op.estimate_mu(x, y)
  with pytest.raises(ValueError, match=r"chunk 0: x column 0 has values only up to .*e-30, "
                     r"below sqrt\(tiny / eps\) = 3.1e-16 of float32.*Rescale the features"):
    op.fit_stream([(x * 1e-30, y)])   # was: mu = estimate_mu(first chunk) makes 1 / mu inf
  with pytest.raises(ValueError, match="mu = 1e\\+45 makes the step size 1 / mu 0 in float32"):
    op.fit_stream([(x, y)], mu=1e45)
  with pytest.raises(ValueError, match="gamma_t = t\\^-theta / mu with mu = 1e\\+37 is 0 in "
                     "float32 at t = "):   # fine at t = 2, underflows later in the stream
    op.fit_stream([(np.tile(x, (400, 1)), np.tile(y, 400))], mu=1e37, theta=1.0)
  with pytest.raises(ValueError, match="features reach \\|x\\| = .*e-200, so mu .* outside "
                     "float64"):
    op.estimate_mu(x * 1e-200)
  # estimate_mu is scale-equivariant, mu(c x) = c^2 mu(x), where c^2 mu stays in range.
  assert op.estimate_mu(x * 1e-100) == pytest.approx(1e-200 * op.estimate_mu(x), rel=1e-9)
  # float64 states take what float32 ones cannot; the estimator scales such data first.
  with jax.enable_x64(True):
    wide = op.fit_stream([(x * 1e20, y)], dtype=jnp.float64)
  assert np.all(np.isfinite(np.asarray(wide.state.w)))
  for factor in (1e20, 1e-30, 1e300):
    ranker = op.OnlinePairwiseRanker().fit(x * factor, y)
    np.testing.assert_allclose(ranker.decision_function(x * factor),
                               op.OnlinePairwiseRanker().fit(x, y).decision_function(x),
                               rtol=1e-5, atol=1e-6)


def test_a_failed_first_fit_leaves_the_ranker_unfitted_and_a_failed_refit_as_it_was():
  from sklearn import exceptions   # pylint: disable=g-import-not-at-top
  x, y = _ranking_data(50)
  ranker = op.OnlinePairwiseRanker()
  with pytest.raises(ValueError, match="every point of the sample is the same"):
    ranker.fit(np.ones((50, 3)), y)
  with pytest.raises(exceptions.NotFittedError):
    ranker.decision_function(x)
  # A failed refit keeps the fitted model and its scaling (fit used to delete them first).
  ranker.fit(x, y)
  coef, scores = ranker.coef_.copy(), ranker.decision_function(x)
  with pytest.raises(ValueError, match="every point of the sample is the same"):
    ranker.fit(np.ones((50, 3)), y)
  np.testing.assert_array_equal(ranker.coef_, coef)
  np.testing.assert_array_equal(ranker.decision_function(x), scores)
  assert ranker.scaled_inputs_ is True


def test_every_product_of_eq_1_runs_at_full_float32_precision():
  from tests.test_engine import _products_below_the_rule   # pylint: disable=g-import-not-at-top
  x, y = _data(20, 3)
  step_size = op.polynomial_step_size(0.75, 4.0)
  for state in (op.init(3), op.init_literal(3, 20)):
    below, total = _products_below_the_rule(
        lambda s, a, b: op.run(s, a, b, step_size)[0], state, x.astype(np.float32),
        y.astype(np.float32))
    assert total > 0 and below == [], below


# ---- Bad inputs (RELIABILITY.md) ----------------------------------------------------------------

def test_fit_stream_chunk_checks():
  x, y = toy.X_L, np.random.default_rng(1).normal(size=24)
  with pytest.raises(TypeError, match="chunk 0: x is a scipy sparse matrix.*toarray"):
    op.fit_stream([(sp.csr_matrix(x), y)], mu=10.0)
  with pytest.raises(ValueError, match=r"chunk 1: x has values up to .*row 2.* exceed the float32"):
    op.fit_stream([(x, y), (toy.with_value(x, (2, 0), 1e300), y)], mu=10.0)
  with pytest.raises(ValueError, match=r"chunk 0 has 1 examples with NaN .*\(first at row 5\)"):
    op.fit_stream([(toy.with_value(x, (5, 1), np.nan), y)], mu=10.0)
  with pytest.raises(TypeError, match="chunk_size must be a whole number >= 1 or None; received"):
    op.fit_stream([(x, y)], mu=10.0, chunk_size=2.5)
  with pytest.raises(ValueError, match="num_chunks must be a whole number >= 0; received -1"):
    op.fit_stream([(x, y)], mu=10.0, num_chunks=-1)
  with pytest.raises(ValueError, match="the stream was empty"):
    op.fit_stream([(x[:0], y[:0])], mu=10.0)
  with pytest.raises(ValueError, match=r"estimate_mu: the sample has 1 rows with NaN .*row 3"):
    op.estimate_mu(toy.with_value(x, (3, 0), np.inf))


def test_pairwise_ranking_accuracy_refuses_non_finite_and_mismatched_input():
  s = np.array([0.1, 0.5, 0.9, 0.3, 0.2, 0.7])
  t = np.array([0.0, 1.0, 2.0, 0.0, 1.0, 2.0])
  raises_short(ValueError, r"scores has 1 NaN or infinite values \(first at row 2\)",
               pairwise_ranking_accuracy, np.where(np.arange(6) == 2, np.nan, s), t)
  raises_short(ValueError, r"targets has 1 NaN or infinite values \(first at row 4\)",
               pairwise_ranking_accuracy, s, np.where(np.arange(6) == 4, np.nan, t))
  raises_short(ValueError, "scores and targets must have the same length; received 6 and 5",
               pairwise_ranking_accuracy, s, t[:5])


@pytest.fixture(scope="module")
def stream():
  rng = np.random.default_rng(3)
  x = rng.normal(size=(40, 3))
  return x, x @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=40)


def test_fit_refuses_one_valued_targets_and_partial_fit_takes_such_a_chunk(stream):
  """fit on constant targets returned w = 0 (every score tied) without a word, where score()
  refused the same y. A streaming chunk of one value is legitimate: later chunks pair with it."""
  x, y = stream
  for constant in (np.full(40, 3.0), np.zeros(40, int)):
    raises_short(ValueError, r"every target is \[(3|0)\.0\]: no pair to rank",
                 op.OnlinePairwiseRanker(chunk_size=16).fit, x, constant)
  ranker = op.OnlinePairwiseRanker(chunk_size=16).partial_fit(x[:20], np.full(20, 3.0))
  np.testing.assert_array_equal(ranker.coef_, 0.0)   # no pair of different targets yet
  ranker.partial_fit(x[20:], y[20:])
  assert ranker.score(x, y) > 0.8


@pytest.mark.parametrize("mu, words", [(1e300, "too large"), (1e37, "too large"),
                                       (1e-300, "too small")])
def test_a_mu_float32_cannot_step_with_gets_the_estimators_advice(stream, mu, words):
  """Was: "Rescale the features (... OnlinePairwiseRanker(scale_inputs=True) ...), or use
  dtype=float64": the default already, and a parameter the estimator does not have."""
  x, y = stream
  estimate = op.estimate_mu(op.OnlinePairwiseRanker(mu=1.0).fit(x, y).input_scale_ ** -1.0
                            * (x - x.min(axis=0)))
  message = raises_short(ValueError, re.escape(f"mu={mu:g} is {words}: the step size") + ".* "
                         r"Leave mu=None "
                         rf"\(estimate_mu on the first chunk \({estimate:.3g} for these rows\)\)",
                         op.OnlinePairwiseRanker(mu=mu, chunk_size=16).fit, x, y)
  assert "dtype" not in message and "scale_inputs" not in message
  ranker = op.OnlinePairwiseRanker(mu=2.0, chunk_size=16).partial_fit(x[:20], y[:20])
  with pytest.raises(ValueError, match=re.escape(f"mu={mu:g} is {words}")):   # between chunks
    ranker.set_params(mu=mu).partial_fit(x[20:], y[20:])


def test_ranker_score_refuses_nan_targets_and_wrong_lengths(stream):
  x, y = stream
  ranker = op.OnlinePairwiseRanker(mu=50.0, chunk_size=16).fit(x, y)
  raises_short(ValueError, r"y has 1 NaN or infinite values \(first at row 3\)", ranker.score, x,
               np.where(np.arange(40) == 3, np.nan, y))
  raises_short(ValueError, "same length; received 40 and 35", ranker.score, x, y[:35])
  x_nan = x.copy()
  x_nan[7, 1] = np.nan
  for method in (ranker.fit, ranker.partial_fit):
    raises_short(ValueError, r"X contains NaN or inf: 1 rows, the first at row 7", method,
                 x_nan, y)


@pytest.mark.parametrize("schedule, value", [(lambda t: -0.1, "-0.1"), (lambda t: 0.0, "0"),
                                             (lambda t: jnp.where(t > 20, jnp.nan, 0.01), "nan")])
def test_fit_stream_refuses_a_schedule_that_is_not_positive(stream, schedule, value):
  x, y = stream
  t = "21" if value == "nan" else "2"
  raises_short(ValueError, rf"step_size gave gamma_t = {value} at iteration t = {t} \(chunk 0\)",
               op.fit_stream, [(x, y)], step_size=schedule, chunk_size=16)


def test_online_arguments_are_checked(stream):
  x, y = stream
  for name, value in (("theta", "a"), ("theta", None), ("mu", "a")):
    raises_short(TypeError, f"{name} must be a .*received {value!r}", op.polynomial_step_size,
                 **{"theta": 0.75, "mu": 1.0, name: value})
    raises_short(TypeError, f"{name} must be a .*received {value!r}",
                 op.OnlinePairwiseRanker(**{name: value}).fit, x, y)
  raises_short(TypeError, "metrics_fn must be a callable .*received int", op.fit_stream, [(x, y)],
               metrics_fn=3)


# ---- Black-box findings: tiny values, synthetic arguments, ignored arguments, bad inputs -------


def test_tiny_targets_and_features_are_refused_not_a_zero_model(stream):
  x, y = stream
  for factor in (1e-36, 1e-38):   # were coef_ = 0 (score 0.5) or a degraded score, silently
    raises_short(ValueError, r"chunk 0: y has values only up to .*below sqrt\(tiny / eps\) = "
                 r"3.1e-16 of float32.*underflow to 0.*Rescale y: a positive factor keeps the "
                 r"ranking", op.OnlinePairwiseRanker(mu=50.0).fit, x, y * factor)
  raises_short(ValueError, "y has values only up to .*e-46", op.fit_stream, [(x, y * 1e-46)],
               mu=50.0)
  tiny_column = x * np.array([1.0, 1e-20, 1.0])
  raises_short(ValueError, r"chunk 0: x column 1 has values only up to .*e-20.*Rescale the "
               "features", op.fit_stream, [(tiny_column, y)], mu=50.0)
  # Small but representable targets (and a zero column: a constant feature) train as before:
  # the iterate scales with y.
  reference = np.asarray(op.fit_stream([(x, y)], mu=50.0).state.w)
  small = np.asarray(op.fit_stream([(x, y * 1e-12)], mu=50.0).state.w)
  np.testing.assert_allclose(small * 1e12, reference, rtol=1e-5)
  op.fit_stream([(x * np.array([1.0, 0.0, 1.0]), y)], mu=50.0)
  with jax.enable_x64(True):   # float64 states hold what float32 cannot
    wide = op.fit_stream([(x, y * 1e-38)], mu=50.0, dtype=jnp.float64)
  np.testing.assert_allclose(np.asarray(wide.state.w) * 1e38, reference, rtol=1e-5)


SYNTHETIC_ERRORS = {
    "separation_negative": (lambda: op.make_bipartite_problem(0, 3, separation=-2), ValueError,
                            r"separation must be finite and >= 0; received -2\. It is a distance"),
    "separation_nan": (lambda: op.make_bipartite_problem(0, 3, separation=np.nan), ValueError,
                       "separation must be finite and >= 0; received nan"),
    "separation_inf": (lambda: op.make_bipartite_problem(0, 3, separation=np.inf), ValueError,
                       "separation must be finite"),
    "separation_huge": (lambda: op.make_bipartite_problem(0, 3, separation=1e20), ValueError,
                        "separation=1e\\+20 is too large: D\\^2 leaves the float32 range"),
    "separation_text": (lambda: op.make_bipartite_problem(0, 3, separation="1"), TypeError,
                        "separation must be a number"),
    "bipartite_dim_zero": (lambda: op.make_bipartite_problem(0, 0), ValueError,
                           "dim must be a whole number >= 1; received 0"),
    "bipartite_dim_fraction": (lambda: op.make_bipartite_problem(0, 2.5), TypeError,
                               "dim must be a whole number >= 1; received 2.5"),
    "positive_rate_nan": (lambda: op.make_bipartite_problem(0, 3, positive_rate=np.nan),
                          ValueError, r"positive_rate must be in \(0, 1\); received nan"),
    "positive_rate_text": (lambda: op.make_bipartite_problem(0, 3, positive_rate="0.3"),
                           TypeError, r"positive_rate must be a number in \(0, 1\)"),
    "linear_dim_fraction": (lambda: op.make_linear_problem(0, 3.7, 3), TypeError,
                            "dim must be a whole number >= 1; received 3.7"),
    "linear_rank_fraction": (lambda: op.make_linear_problem(0, 3, 1.5), TypeError,
                             "rank must be a whole number >= 1; received 1.5"),
    "noise_nan": (lambda: op.make_linear_problem(0, 3, 2, noise=np.nan), ValueError,
                  "noise must be finite and >= 0; received nan"),
    "scale_inf": (lambda: op.make_linear_problem(0, 3, 2, scale=np.inf), ValueError,
                  "scale must be positive and finite; received inf"),
    "scale_overflow": (lambda: op.make_linear_problem(0, 3, 2, scale=1e20), ValueError,
                       "mu = 1e\\+41, outside the float32 range"),
    "scale_underflow": (lambda: op.make_linear_problem(0, 3, 2, scale=1e-20), ValueError,
                        "lambda_rho = 2e-40, .*outside the float32"),
    "scale_shape": (lambda: op.make_linear_problem(0, 3, 2, scale=[1.0, 2.0, 3.0]), ValueError,
                    r"scale must be a number or have shape \[rank\] = \[2\]"),
    "scale_text": (lambda: op.make_linear_problem(0, 3, 2, scale="1"), TypeError,
                   "scale must be a positive number"),
    "w_star_norm_negative": (lambda: op.make_linear_problem(0, 3, 2, w_star_norm=-1), ValueError,
                             r"w_star_norm must be finite and >= 0; received -1\. It is the norm"),
    "null_norm_negative": (lambda: op.make_linear_problem(0, 3, 2, null_norm=-1.0), ValueError,
                           "null_norm must be finite and >= 0"),
    "null_norm_full_rank": (lambda: op.make_linear_problem(0, 3, 3, null_norm=1.0), ValueError,
                            "null_norm=1 needs rank < dim"),
    "intercept_nan": (lambda: op.make_linear_problem(0, 3, 2, intercept=np.nan), ValueError,
                      "intercept must be a finite number; received nan"),
    "sample_num_negative": (lambda: op.sample_bipartite(op.make_bipartite_problem(0, 3), 0, -1),
                            ValueError, "num must be a whole number >= 0; received -1"),
    "sample_num_fraction": (lambda: op.sample_linear(op.make_linear_problem(0, 3, 2), 0, 2.5),
                            TypeError, "num must be a whole number >= 0; received 2.5"),
    "sample_key": (lambda: op.sample_linear(op.make_linear_problem(0, 3, 2), "a", 5), TypeError,
                   "key must be an int seed or a jax.random.key"),
    "sample_problem": (lambda: op.sample_bipartite(op.make_linear_problem(0, 3, 2), 0, 5),
                       TypeError, "problem must be a BipartiteProblem .*received LinearProblem"),
}


@pytest.mark.parametrize("case", sorted(SYNTHETIC_ERRORS))
def test_synthetic_generators_refuse_bad_arguments(case):
  fn, error, match = SYNTHETIC_ERRORS[case]
  raises_short(error, match, fn)


def test_synthetic_known_answers_match_their_arguments(key):
  """Counts are never truncated (whole floats pass), ||w*|| = w_star_norm, int seeds as keys."""
  for make, args in ((op.make_linear_problem, (0, 4, 2)), (op.make_bipartite_problem, (0, 3))):
    whole = make(*(float(a) for a in args))
    for a, b in zip(whole, make(*args)):
      np.testing.assert_array_equal(a, b)
  for norm in (0.0, 2.5):
    problem = op.make_linear_problem(0, 4, 2, w_star_norm=norm)
    assert np.linalg.norm(problem.w_star) == pytest.approx(norm)
  full = op.make_linear_problem(0, 3, 3)   # default null_norm: 0 at full rank
  np.testing.assert_array_equal(full.w_true, full.w_star)
  none = op.make_bipartite_problem(0, 3, separation=0.0)
  assert none.optimal_auc == 0.5 and not np.any(none.w_star)
  # By seed and by key: the shapes (and so the compiled samplers) of
  # test_float32_stream_tracks_float64_over_long_runs and test_bipartite_ranking_reaches_the_
  # optimal_auc.
  for sample, problem, dim in ((op.sample_linear, op.make_linear_problem(0, 4, 3), 4),
                               (op.sample_bipartite, op.make_bipartite_problem(0, 5), 5)):
    by_seed, by_key = sample(problem, 7, 20000), sample(problem, jax.random.key(7), 20000)
    np.testing.assert_array_equal(by_seed[0], by_key[0])
    assert sample(problem, key, 0)[0].shape == (0, dim)
    batched = jax.vmap(lambda k, s=sample, p=problem: s(p, k, 4))(jax.random.split(key, 2))
    assert batched[0].shape == (2, 4, dim)


def test_arguments_without_effect_are_refused(stream):
  x, y = stream
  schedule = op.polynomial_step_size(0.75, 100.0)
  raises_short(ValueError, r"mu=5.0 would be ignored: step_size=PolynomialStepSize\(theta=0.75, "
               r"mu=100.0\) sets its own schedule.*Drop mu", op.fit_stream, [(x, y)],
               step_size=schedule, mu=5.0)
  raises_short(ValueError, "theta=0.9 would be ignored: step_size=.* sets its own schedule",
               op.fit_stream, [(x, y)], step_size=schedule, theta=0.9)
  raises_short(ValueError, "capacity=3 applies to form='literal' only", op.fit_stream, [(x, y)],
               mu=50.0, capacity=3)
  raises_short(ValueError, "capacity=3 applies to form='literal' only", op.fit_stream, [(x, y)],
               mu=50.0, capacity=3, form="incremental")
  first = op.fit_stream([(x[:20], y[:20])], mu=50.0, form="literal", capacity=40)
  raises_short(ValueError, "capacity=60 would be ignored: a given state keeps its own buffer",
               op.fit_stream, [(x[20:], y[20:])], state=first.state,
               step_size=first.step_size, capacity=60)
  raises_short(TypeError, "capacity must be a whole number >= 1 or None; received 2.5",
               op.fit_stream, [(x, y)], mu=50.0, form="literal", capacity=2.5)
  state = op.fit_stream([(x[:20], y[:20])], mu=50.0).state
  with jax.enable_x64(True):
    raises_short(ValueError, "dtype=float64 would be ignored: the given state is float32",
                 op.fit_stream, [(x[20:], y[20:])], state=state, mu=50.0, dtype=jnp.float64)
  # The state's own dtype is no contradiction, and theta / mu shape the default schedule.
  same = op.fit_stream([(x[20:], y[20:])], state=state, mu=50.0, dtype=jnp.float32)
  assert same.state.w.dtype == jnp.float32
  assert op.fit_stream([(x, y)], mu=5.0, theta=0.9).step_size == (0.9, 5.0)


@pytest.mark.parametrize("dtype, count", [(jnp.bfloat16, "256"), (jnp.float16, "2048")])
def test_half_precision_states_are_refused(stream, dtype, count):
  x, y = stream
  name = jnp.dtype(dtype).name
  raises_short(ValueError, f"dtype must be float32 or float64; received {name}: the running "
               f"moments divide by the example count, which {name} holds exactly only up to "
               f"{count}", op.fit_stream, [(x, y)], dtype=dtype)
  raises_short(ValueError, f"received {name}", op.init, 3, dtype)
  raises_short(TypeError, "dtype must be a float dtype .*received 'abc'", op.init, 3, "abc")


def test_estimate_mu_refuses_complex_and_text(stream):
  x, _ = stream
  raises_short(TypeError, "estimate_mu's x must be real numbers; received dtype complex128",
               op.estimate_mu, x + 1j)
  raises_short(TypeError, "estimate_mu's x must be real numbers; received dtype <U",
               op.estimate_mu, x.astype(str))
  raises_short(TypeError, r"rtol must be a number in \[0, 1\).*received 'abc' of type str",
               op.estimate_mu, x, "abc")
  raises_short(TypeError, "x is a scipy sparse matrix", op.estimate_mu, sp.csr_matrix(x))


def test_ranker_bad_inputs_get_short_errors(stream):
  import pandas as pd   # pylint: disable=g-import-not-at-top
  x, y = stream
  ranker = op.OnlinePairwiseRanker(mu=50.0)
  raises_short(ValueError, "Complex data not supported: X has dtype complex128.*np.c_",
               ranker.fit, x + 1j, y)
  raises_short(ValueError, "Complex data not supported: y has dtype complex128", ranker.fit, x,
               y + 1j)
  raises_short(TypeError, "y must be real numbers .*received dtype <U.*e.g. 'a'", ranker.fit, x,
               np.array(["a"] * 40))
  raises_short(TypeError, "y must be real numbers .*received dtype <U.*e.g. '1'", ranker.fit, x,
               np.array(["1"] * 40))   # numbers as text: fit's message (was "chunk 0: ...")
  text = pd.DataFrame(x, columns=["a", "b", "c"]).astype(object)
  text.iloc[5, 2] = "high"
  raises_short(ValueError, r"X has text in column\(s\) c \(e.g. 'high' at row 5\)", ranker.fit,
               text, y)
  raises_short(ValueError, r"X must be 2-D \[n_samples, n_features\]; received shape \(40,\)",
               ranker.fit, x[:, 0], y)
  raises_short(ValueError, "X contains NaN or inf: 1 rows", ranker.fit,
               toy.with_value(x, (2, 1), np.nan), y)
  fitted = ranker.fit(x, y)
  raises_short(ValueError, "Complex data not supported: X", fitted.decision_function, x + 1j)
  raises_short(ValueError, r"X has text in column\(s\) c", fitted.decision_function, text)
  # Numbers held in objects are numbers: the same model as the float targets.
  np.testing.assert_allclose(op.OnlinePairwiseRanker(mu=50.0).fit(x, y.astype(object)).coef_,
                             fitted.coef_, rtol=1e-12)
  # Sweep V: an ordered Categorical's stated order was replaced by its values' order, and the
  # advice for ordered text (np.unique(y, return_inverse=True)[1]) ranked it alphabetically.
  classes = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
  by_codes = op.OnlinePairwiseRanker(mu=50.0).fit(x, classes.astype(float)).coef_
  words = np.array(["lo", "mid", "hi"])[classes]
  for stated in (pd.Categorical(classes, categories=[2, 1, 0], ordered=True),
                 pd.Series(pd.Categorical(words, categories=["hi", "mid", "lo"], ordered=True))):
    np.testing.assert_allclose(op.OnlinePairwiseRanker(mu=50.0).fit(x, stated).coef_,
                               op.OnlinePairwiseRanker(mu=50.0).fit(x, 2.0 - classes).coef_,
                               rtol=1e-12)
    assert fitted.score(x, stated) == fitted.score(x, 2.0 - classes)   # scored in its order too
  np.testing.assert_allclose(op.OnlinePairwiseRanker(mu=50.0).fit(x, pd.Categorical(
      classes, categories=[0, 1, 2], ordered=True)).coef_, by_codes, rtol=1e-12)
  raises_short(TypeError, r"State the order of ordered classes: y = pd.Categorical\(y, categories="
               r"order, ordered=True\)", ranker.fit, x, words)
