r"""Theorem 1 of online pairwise least squares: ||w_{T+1} - w*||^2 against T, Lemma 1, ranking AUC.

  python -m experiments.online_pairwise_rate --output_dir=results/online_pairwise

Rate: a ``LinearProblem`` stream (x on an r-dimensional affine subspace of R^d, so C_rho has
d - r zero eigenvalues; uniform label noise), mu = lambda_rho + kappa^2 from the distribution's
closed form, gamma_t = t^-theta / mu, T up to 10^6 with the incremental O(d^2) form, streamed in
chunks generated on the device. The squared error after every example is averaged over
repetitions; its log-log slope over T in [--fit_from, T] is compared with Theorem 1's
-(2 theta - 1) and with the mean-square recursion of the linearized update (see
``mean_square_prediction``). Lemma 1: the largest component of any iterate in V_0.
Bipartite ranking: labels {0, 1} from two Gaussian classes; test AUC of w_T against the best
possible AUC. Writes online_pairwise_rate.{json,md,csv}, online_pairwise_auc.{json,md,csv} and
online_pairwise_rate.png into --output_dir.
"""

import dataclasses
import functools
import itertools
import time

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import metrics
from qsg_jax import online_pairwise as op
from experiments.common import cli
from experiments.common import reporting
from experiments.common import store as store_lib


_binary_auc = jax.jit(metrics.binary_auc)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The experiment's settings (one flag each)."""
  output_dir: str = "results/online_pairwise"
  thetas: tuple[float, ...] = cli.setting((0.6, 0.75, 0.9), "Step-size exponents theta in "
                                          "(1/2, 1).", lower=0.5, upper=1.0)
  num_steps: int = cli.setting(10**6, "T, examples per run.", lower=2)
  num_repeats: int = cli.setting(30, "Independent streams per theta.", lower=1)
  dim: int = cli.setting(10, "Features d.", lower=1)
  rank: int = cli.setting(3, "Rank r of C_rho (d - r zero eigenvalues).", lower=1)
  noise: float = cli.setting(1.0, "Half-width of the uniform label noise.", lower=0.0)
  chunk_size: int = cli.setting(10000, "Examples per streamed chunk (one jitted scan).", lower=1)
  fit_from: int = cli.setting(10**4, "Fit slopes over T in [fit_from, num_steps].", lower=1)
  seed: int = cli.setting(0, "Seed of the problem and the streams.")
  float64: bool = cli.setting(True, "Run in float64 (jax_enable_x64).")
  bipartite_steps: int = cli.setting(10**6, "T of the bipartite ranking run.", lower=1)
  bipartite_dim: int = cli.setting(10, "Features of the bipartite ranking problem.", lower=1)
  test_size: int = cli.setting(20000, "Test points of the bipartite AUC.", lower=2)

  def __post_init__(self):
    super().__post_init__()
    marks = rate_checkpoints(self.num_steps)
    if np.sum(marks >= self.fit_from) < 2:   # before any run store: the run died after a theta
      raise cli.UserError(f"--fit_from={self.fit_from} leaves fewer than 2 of the checkpoints "
                          f"(10 .. --num_steps={self.num_steps}) for the slope fit: lower "
                          f"--fit_from to at most {int(marks[-2])} or raise --num_steps.")


def rate_checkpoints(num_steps, num_checkpoints=120):
  """The T at which the rate is read: about ``num_checkpoints`` log-spaced steps in 10..T."""
  return np.unique(np.geomspace(10, num_steps, num_checkpoints).astype(int))


def fit_slope(steps, values, fit_from):
  """Least-squares slope of log(values) against log(steps) over steps >= fit_from."""
  keep = (steps >= fit_from) & (values > 0)
  if keep.sum() < 2:
    raise ValueError(f"fewer than 2 checkpoints at T >= fit_from={fit_from}; lower fit_from or "
                     "raise num_steps.")
  return float(np.polyfit(np.log(steps[keep]), np.log(values[keep]), 1)[0])


def mean_square_prediction(problem, step_size, num_steps):
  """E ||w_{t+1} - w*||^2 of the linearized update, for t = 1..num_steps (equal scales only).

  On V_0^perp, with e_t = w_t - w*, A_t = (x_t - xbar)(x_t - xbar)^T (E A_t = s^2 I and
  E A_t^2 = r s^4 I for z on the sphere of radius sqrt r), fresh noise u_t = (x_t - xbar) eps_t
  (E ||u_t||^2 = q = sigma^2 s^2 r, sigma^2 = noise^2 / 3) and the average of the earlier ones
  b_t = 1/n sum_{j<t} u_j, the pairwise gradient is (A_t + s^2 I) e_t - u_t - b_t up to O(1/t)
  fluctuations of the running moments. E = E||e||^2, X = E e.b and B = E||b||^2 then follow

      E' = (1 - 4 gamma s^2 + (r + 3) gamma^2 s^4) E + 2 gamma (1 - 2 gamma s^2) X
           + gamma^2 (q + B),
      X' = (n ((1 - 2 gamma s^2) X + gamma B) + gamma q) / (n + 1),   B' = (n^2 B + q) / (n + 1)^2,

  from E = ||w*||^2, X = 0, B = q at t = 2. The fresh noise alone gives the tail
  gamma_T q / 4 ~ T^-theta; b_t adds a term ~ q / (2 s^4 T) ~ T^-1; the start decays like
  exp(-4 s^2 sum_t gamma_t).
  """
  scale = float(problem.scales[0])
  if not np.allclose(problem.scales, scale):
    raise ValueError("mean_square_prediction assumes equal scales.")
  rank = problem.basis.shape[1]
  s2 = scale ** 2
  q = problem.noise ** 2 / 3.0 * s2 * rank
  gamma = np.asarray(step_size(np.arange(1, num_steps + 1)), np.float64)
  out = np.empty(num_steps)
  err, cross, past = float(problem.w_star @ problem.w_star), 0.0, q
  out[0] = err                        # after example 1: w_2 = 0
  for i in range(1, num_steps):       # example t = i + 1 >= 2, n = i earlier ones
    g = float(gamma[i])
    keep = 1.0 - 2.0 * g * s2
    err, cross, past = (
        (1.0 - 4.0 * g * s2 + (rank + 3) * g * g * s2 * s2) * err + 2.0 * g * keep * cross
        + g * g * (q + past),
        (i * (keep * cross + g * past) + g * q) / (i + 1),
        (i * i * past + q) / (i + 1) ** 2)
    out[i] = err
  return out


class _StepMetrics:
  """Per-example squared error to w* and size of the V_0 component (hashable by identity)."""

  def __init__(self, w_star, null_basis):
    self.w_star, self.null_basis = w_star, null_basis

  def __call__(self, state):
    dtype = state.w.dtype
    err = state.w - jnp.asarray(self.w_star, dtype)
    return {"sq_error": err @ err,
            "null_norm": jnp.linalg.norm(state.w @ jnp.asarray(self.null_basis, dtype))}


def rate_experiment(*, thetas=(0.6, 0.75, 0.9), num_steps=10**6, num_repeats=10, dim=10, rank=3,
                    scale=1.0, noise=1.0, chunk_size=10000, fit_from=10**4, num_checkpoints=120,
                    seed=0, log=cli.log_line):
  """Runs the Theorem 1 experiment; returns a dict of per-theta results and curves."""
  problem = op.make_linear_problem(seed, dim, rank, scale=scale, noise=noise)
  mu = problem.mu
  num_chunks = -(-num_steps // chunk_size)
  checkpoints = rate_checkpoints(num_steps, num_checkpoints)
  step_metrics = _StepMetrics(problem.w_star, problem.null_basis)
  sample = functools.partial(op.sample_linear, problem, num=chunk_size)
  # A sample of x, to show that x itself is not orthogonal to V_0 (only differences are).
  x_probe, _ = sample(jax.random.key(seed + 10**6))
  x_null = float(np.min(np.linalg.norm(np.asarray(x_probe) @ problem.null_basis, axis=1)))
  results = []
  for i, theta in enumerate(thetas):
    step_size = op.polynomial_step_size(theta, mu)
    curves, null_max, final_true = [], 0.0, []
    start = time.perf_counter()
    for rep in range(num_repeats):
      key = jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), i), rep)
      chunks = lambda c, key=key: sample(jax.random.fold_in(key, c))
      out = op.fit_stream(chunks, num_chunks=num_chunks, step_size=step_size,
                          metrics_fn=step_metrics, dtype=jnp.result_type(float))
      sq = out.metrics["sq_error"][:num_steps]
      curves.append(sq[checkpoints - 1])
      null_max = max(null_max, float(np.max(out.metrics["null_norm"])))
      w = np.asarray(out.state.w)
      final_true.append(float(np.sum((w - problem.w_true) ** 2)))
    seconds = time.perf_counter() - start
    curves = np.asarray(curves)
    mean_curve = curves.mean(axis=0)
    predicted = mean_square_prediction(problem, step_size, num_steps)[checkpoints - 1]
    rep_slopes = [fit_slope(checkpoints, c, fit_from) for c in curves]
    slope = fit_slope(checkpoints, mean_curve, fit_from)
    theory = -(2.0 * theta - 1.0)
    results.append({
        "theta": theta, "slope": slope, "slope_per_repeat_mean": float(np.mean(rep_slopes)),
        "slope_per_repeat_std": float(np.std(rep_slopes, ddof=1)) if num_repeats > 1 else 0.0,
        "theorem_slope": theory, "abs_diff": abs(slope - theory),
        "within_0.15": bool(abs(slope - theory) <= 0.15),
        "predicted_slope": fit_slope(checkpoints, predicted, fit_from),
        "slope_last_decade": fit_slope(checkpoints, mean_curve, num_steps / 10),
        "predicted_slope_last_decade": fit_slope(checkpoints, predicted, num_steps / 10),
        "asymptotic_slope": -theta,
        "sq_error_T": float(mean_curve[-1]), "predicted_sq_error_T": float(predicted[-1]),
        "max_null_component": null_max,
        "sq_distance_to_w_true_T": float(np.mean(final_true)),
        "seconds": seconds, "mean_curve": mean_curve, "predicted_curve": predicted,
        "curves": curves})
    log(f"theta={theta}: slope {slope:.3f} (per repeat {np.mean(rep_slopes):.3f} +- "
          f"{np.std(rep_slopes):.3f}), Theorem 1 {theory:.3f}, mean-square recursion "
          f"{results[-1]['predicted_slope']:.3f}; ||w_T - w*||^2 = {mean_curve[-1]:.3e}; "
          f"max |P_V0 w_t| = {null_max:.1e}; {seconds:.1f} s")
  return {"problem": {"dim": dim, "rank": rank, "scale": scale, "noise": noise,
                      "lambda_rho": problem.lambda_rho, "kappa": problem.kappa, "mu": mu,
                      "w_star_norm": float(np.linalg.norm(problem.w_star)),
                      "null_component_of_w_true": float(np.linalg.norm(
                          problem.null_basis.T @ problem.w_true)),
                      "min_null_component_of_x": x_null},
          "num_steps": num_steps, "num_repeats": num_repeats, "fit_from": fit_from,
          "chunk_size": chunk_size, "checkpoints": checkpoints, "results": results}


def _cut_stream(sample, key, chunk_size, cuts):
  """Yields the stream of ``sample`` chunk by chunk, split at the example counts ``cuts``."""
  for c in itertools.count():
    x, y = (np.asarray(a) for a in sample(jax.random.fold_in(key, c)))   # slice on the host
    inner = [k - c * chunk_size for k in cuts if c * chunk_size < k < (c + 1) * chunk_size]
    bounds = [0] + inner + [chunk_size]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
      yield x[lo:hi], y[lo:hi]


def bipartite_experiment(*, num_steps=10**6, dim=10, thetas=(0.6, 0.75, 0.9), chunk_size=10000,
                         test_size=20000, separation=1.5, positive_rate=0.3, seed=0,
                         log=cli.log_line):
  """Online pairwise least squares on {0, 1} labels; test AUC of w_T at checkpoints."""
  problem = op.make_bipartite_problem(seed, dim, separation=separation,
                                      positive_rate=positive_rate)
  sample = functools.partial(op.sample_bipartite, problem, num=chunk_size)
  key, key_test, key_mu = jax.random.split(jax.random.key(seed + 1), 3)
  x_test, y_test = op.sample_bipartite(problem, key_test, test_size)
  # kappa is unbounded for Gaussians: mu is estimated on a held-out sample (a lower estimate).
  mu = op.estimate_mu(np.asarray(op.sample_bipartite(problem, key_mu, 2000)[0]))
  auc_star = float(_binary_auc(x_test @ jnp.asarray(problem.w_star, x_test.dtype), y_test))
  checkpoints = [c for c in (10**2, 10**3, 10**4, 10**5, 10**6, 10**7) if c < num_steps]
  checkpoints.append(num_steps)
  ends = sorted(set(range(chunk_size, num_steps + 1, chunk_size)) | set(checkpoints))
  rows = []
  for theta in thetas:
    step_size = op.polynomial_step_size(theta, mu)
    # One stream, cut at the checkpoints; each fit_stream call continues from the last state.
    pieces = _cut_stream(sample, key, chunk_size, checkpoints)
    state, done = None, 0
    for target in checkpoints:
      num_pieces = sum(done < e <= target for e in ends)
      out = op.fit_stream(pieces, num_chunks=num_pieces, state=state, step_size=step_size,
                          chunk_size=chunk_size, dtype=x_test.dtype)
      state, done = out.state, target
      w = np.asarray(state.w)
      auc = float(_binary_auc(x_test @ state.w, y_test))
      cosine = float(w @ problem.w_star / (np.linalg.norm(w) * np.linalg.norm(problem.w_star)))
      rows.append({"theta": theta, "T": target, "test_auc": auc,
                   "optimal_auc": problem.optimal_auc, "w_star_test_auc": auc_star,
                   "gap_to_w_star": auc_star - auc, "cosine_to_w_star": cosine})
    log(f"bipartite theta={theta}: test AUC at T = {checkpoints}: "
          f"{[round(r['test_auc'], 4) for r in rows[-len(checkpoints):]]} (w* on the same test "
          f"set {auc_star:.4f}, population optimum {problem.optimal_auc:.4f}); "
          f"cos(w_T, w*) = {rows[-1]['cosine_to_w_star']:.4f}")
  return {"dim": dim, "thetas": list(thetas), "mu": mu, "separation": separation,
          "positive_rate": positive_rate, "test_size": test_size,
          "optimal_auc": problem.optimal_auc, "w_star_test_auc": auc_star, "rows": rows}


def plot(rate, bipartite, path):
  """Log-log error curves with fitted and theoretical slopes; AUC against T."""
  plt = reporting.pyplot()
  fig, (ax, ax_auc) = plt.subplots(1, 2, figsize=(13, 5))
  steps = rate["checkpoints"]
  fit_from = rate["fit_from"]
  colors = plt.cm.viridis(np.linspace(0.0, 0.85, len(rate["results"])))
  for res, color in zip(rate["results"], colors):
    theta = res["theta"]
    ax.loglog(steps, res["mean_curve"], color=color, lw=2,
              label=f"theta={theta}: fitted slope {res['slope']:.2f}, Theorem 1 "
                    f"{res['theorem_slope']:.2f}")
    ax.loglog(steps, res["predicted_curve"], color=color, ls=":", lw=1.5)
    anchor = steps >= fit_from
    t0, e0 = steps[anchor][0], res["mean_curve"][anchor][0]
    tail = steps[anchor]
    ax.loglog(tail, e0 * (tail / t0) ** res["theorem_slope"], color=color, ls="--", lw=1)
  ax.axvline(fit_from, color="gray", lw=0.8)
  ax.set_xlabel("T (examples)")
  ax.set_ylabel("||w_{T+1} - w*||^2 (mean over %d repeats)" % rate["num_repeats"])
  ax.set_title("solid: measured, dotted: mean-square recursion,\ndashed: slope -(2 theta - 1) "
               "from the fit start")
  ax.legend(fontsize=8)
  for theta, color in zip(bipartite["thetas"],
                          plt.cm.viridis(np.linspace(0.0, 0.85, len(bipartite["thetas"])))):
    rows = [r for r in bipartite["rows"] if r["theta"] == theta]
    ax_auc.semilogx([r["T"] for r in rows], [r["test_auc"] for r in rows], "o-", color=color,
                    label=f"w_T, theta={theta}")
  ax_auc.axhline(bipartite["optimal_auc"], color="k", ls="--", label="best possible AUC")
  ax_auc.set_xlabel("T (examples)")
  ax_auc.set_ylabel(f"test AUC ({bipartite['test_size']} points)")
  ax_auc.set_title("bipartite ranking, labels in {0, 1}")
  ax_auc.legend()
  fig.tight_layout()
  return reporting.save_figure(fig, path)


def run(settings: Settings, log=cli.log_line):
  """The whole experiment; writes the results into the output directory and returns them."""
  s = settings
  store = store_lib.RunStore(s.output_dir, "online_pairwise_rate")
  store.start(s.as_dict(exclude=cli.RUN_OPTIONS), resume=s.resume, overwrite=s.overwrite)
  with jax.enable_x64(s.float64):
    rate = rate_experiment(thetas=s.thetas, num_steps=s.num_steps, num_repeats=s.num_repeats,
                           dim=s.dim, rank=s.rank, noise=s.noise, chunk_size=s.chunk_size,
                           fit_from=s.fit_from, seed=s.seed, log=log)
    bipartite = bipartite_experiment(num_steps=s.bipartite_steps, dim=s.bipartite_dim,
                                     thetas=s.thetas, chunk_size=s.chunk_size,
                                     test_size=s.test_size, seed=s.seed, log=log)
  columns = ["theta", "slope", "slope_per_repeat_mean", "slope_per_repeat_std", "theorem_slope",
             "abs_diff", "within_0.15", "predicted_slope", "slope_last_decade",
             "predicted_slope_last_decade", "asymptotic_slope", "sq_error_T",
             "predicted_sq_error_T", "max_null_component", "seconds"]
  small = ("sq_error_T", "predicted_sq_error_T", "max_null_component")   # not 0.0000 in tables
  rows = [{c: (f"{r[c]:.3e}" if c in small else r[c]) for c in columns} for r in rate["results"]]
  summary = dict(rate, bipartite=bipartite)
  reporting.write_report(
      store.dir, "online_pairwise_auc", bipartite, [(None, bipartite["rows"], None)],
      title=f"Bipartite ranking (labels 0/1), d={s.bipartite_dim}, test AUC of w_T")
  png = plot(rate, bipartite, store.dir / "online_pairwise_rate.png")
  paths = store.finish(summary, [(None, rows, columns)],
                       title=f"Theorem 1: log-log slope of ||w_T - w*||^2 over T in "
                             f"[{s.fit_from}, {s.num_steps}], d={s.dim}, rank {s.rank}, "
                             f"{s.num_repeats} repeats")
  log(reporting.markdown_table(rows, columns, floatfmt=".4g"))
  log(f"wrote {paths['json']}, {paths['md']} and {png}")
  return summary


def run_all(**settings):
  """``run(Settings(**settings))`` (the keyword form tests/test_online_pairwise.py calls)."""
  return run(Settings(**settings))


if __name__ == "__main__":
  cli.script(Settings, run)
