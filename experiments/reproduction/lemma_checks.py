r"""Numerical checks of the papers' lemmas and identities that no experiment script measures.

  python -m experiments.reproduction.lemma_checks          # seconds; prints every check

1. QSG-S2AUC Lemma 2 / QS3ORAO Lemma 3: with eta_i = theta / i and theta lam in (1, 2) or a
   positive integer, a_t^i = -eta_i prod_{j=i+1}^t (1 - eta_j lam) satisfies |a_t^i| <= theta / t
   and sum_i |a_t^i|^2 <= theta^2 / t.
2. QS3ORAO Eq. (6) (from Xie and Li 2018): R_PN = R_PU + R_NU - 1/2 when the unlabeled points are
   the class mixture, for the 0-1 AUC risk; and what the squared surrogate the papers optimize
   gives instead (the identity R_PU + R_NU - 1/2 = R_PN + [pi E l(f_p, f_p') + (1 - pi)
   E l(f_n, f_n') - 1/2], whose bracket is 0 for the 0-1 loss and 2 (pi Var(f|+) + (1 - pi)
   Var(f|-)) + 1/2 for l = (1 - u + v)^2).
3. QS3ORAO Lemma 1: the all-threshold loss's minimizer b* is unique and b*_1 < ... < b*_{k-1}:
   ordering on random ordinal scores for both surrogates; uniqueness on a small example.
4. Online pairwise Lemma 3: ||w_t|| <= 2 M (sum_{j=2}^{t-1} gamma_j)^(1/2) along streams of the
   rate experiment's data (gamma_t = t^-theta / mu, mu = 14).
"""

import math

import jax.numpy as jnp
import numpy as np

from qsg_jax import online_pairwise
from qsg_jax import thresholds
from experiments.reproduction import online_bound_constant


def lemma_step_coefficients(theta, lam, t):
  """|a_t^i| for i = 1..t with eta_i = theta / i (float64)."""
  eta = theta / np.arange(1, t + 1)
  factors = 1.0 - eta * lam                              # j = 1..t
  # prod_{j=i+1}^t factors_j for every i: reverse cumulative product, shifted by one.
  tail = np.concatenate([np.cumprod(factors[::-1])[::-1][1:], [1.0]])
  return np.abs(eta * tail)


def check_step_lemma():
  print("1. |a_t^i| <= theta/t and sum_i |a_t^i|^2 <= theta^2/t (eta_i = theta/i, lam = 0.5)")
  worst = 0.0
  for theta_lam in (1.05, 1.5, 1.95, 2.0, 3.0):
    theta, lam = theta_lam / 0.5, 0.5
    for t in (2, 10, 100, 1000, 100000):
      a = lemma_step_coefficients(theta, lam, t)
      ratio_max, ratio_sq = a.max() / (theta / t), np.sum(a * a) / (theta ** 2 / t)
      worst = max(worst, ratio_max, ratio_sq)
      if t in (10, 100000):
        print(f"   theta lam = {theta_lam:g}, t = {t}: max_i |a_t^i| / (theta/t) = "
              f"{ratio_max:.4f}, sum |a_t^i|^2 / (theta^2/t) = {ratio_sq:.4f}")
  print(f"   largest ratio over theta lam in {{1.05, 1.5, 1.95, 2, 3}}, t in "
        f"{{2, 10, 100, 1e3, 1e5}}: {worst:.4f} ({'holds' if worst <= 1 + 1e-12 else 'FAILS'})")


def check_unbiased_risk(seed=0, n=400_000, pi=0.3):
  print("2. Eq. (6): R_PN = R_PU + R_NU - 1/2 with unlabeled ~ pi p+ + (1 - pi) p-")
  rng = np.random.default_rng(seed)
  f_p = rng.normal(1.0, 1.0, n)            # scores of positives
  f_n = rng.normal(0.0, 1.3, n)            # scores of negatives
  is_pos = rng.random(n) < pi
  f_u = np.where(is_pos, rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.3, n))
  zero_one = lambda u, v: (u <= v).astype(float)      # continuous scores: ties have measure 0
  squared = lambda u, v: (1.0 - u + v) ** 2
  perm = rng.permutation(n)                             # independent pairs, one per point
  for name, loss in (("0-1", zero_one), ("squared", squared)):
    r_pn = loss(f_p, f_n[perm]).mean()
    r_pu = loss(f_p, f_u[perm]).mean()
    r_nu = loss(f_u, f_n[perm]).mean()
    print(f"   {name:7s}: R_PN = {r_pn:.4f}, R_PU + R_NU - 1/2 = {r_pu + r_nu - 0.5:.4f}, "
          f"difference {r_pu + r_nu - 0.5 - r_pn:+.4f}")
  predicted = 2 * (pi * 1.0 ** 2 + (1 - pi) * 1.3 ** 2) + 0.5
  print(f"   (0-1: difference 0 up to Monte Carlo error; squared: predicted difference "
        f"2 (pi Var+ + (1 - pi) Var-) + 1/2 = {predicted:.4f})")


def check_thresholds(seed=0):
  print("3. Lemma 1: thresholds ordered; unique?")
  rng = np.random.default_rng(seed)
  unordered = 0
  for trial in range(200):
    k = int(rng.integers(2, 8))
    y = rng.integers(0, k, 300)
    y[:k] = np.arange(k)                                   # every class present
    f = (y + rng.normal(0, rng.uniform(0.2, 3.0), 300)).astype(np.float32)
    for surrogate in thresholds.SURROGATES:
      b = np.asarray(thresholds.fit_thresholds(jnp.asarray(f), jnp.asarray(y), k, surrogate))
      unordered += int(np.any(np.diff(b) <= 0))
  print(f"   200 random ordinal problems (k = 2..7, overlapping classes) x 2 surrogates: "
        f"{unordered} with b_j >= b_(j+1)")
  f, y = jnp.array([0.0, 1.0, 1.2, 3.0, 4.0]), jnp.array([0, 0, 1, 1, 1])
  for surrogate, margin in (("hinge", 1.0), ("squared_hinge", 1.0), ("squared_hinge", 0.0)):
    values = {b: float(thresholds.all_threshold_loss(jnp.array([b]), f, y, surrogate,
                                                      margin=margin))
              for b in (0.9, 1.0, 1.1, 1.2, 1.3)}
    text = ", ".join(f"L({b}) = {v:.4f}" for b, v in values.items())
    print(f"   f = [0, 1, 1.2, 3, 4], y = [0, 0, 1, 1, 1], {surrogate}, margin {margin}: {text}")


def check_online_norm_bound(num_steps=20000, seed=0):
  print("4. Online Lemma 3: ||w_t|| <= 2 M (sum_{j=2}^{t-1} gamma_j)^(1/2)")
  problem = online_pairwise.make_linear_problem(seed=0, dim=10, rank=3)
  m = online_bound_constant.sup_abs_label(problem)
  rng = np.random.default_rng(seed)
  rank = problem.basis.shape[1]
  g = rng.standard_normal((num_steps, rank))
  z = math.sqrt(rank) * g / np.linalg.norm(g, axis=1, keepdims=True)
  x = problem.offset[None, :] + (z * problem.scales[None, :]) @ problem.basis.T
  y = x @ problem.w_true + problem.intercept + rng.uniform(-1, 1, num_steps) * problem.noise
  for theta in (0.6, 0.75, 0.9):
    w = np.zeros(x.shape[1])
    s_x, s_y, s_xx, s_yx = x[0].copy(), y[0], np.outer(x[0], x[0]), y[0] * x[0]
    worst, gamma_sum = 0.0, 0.0
    for t in range(2, num_steps + 1):                  # w_t known; the paper's t is 1-based
      i = t - 1
      xt, yt, n = x[i], y[i], t - 1
      a = w @ xt - yt
      grad = a * (n * xt - s_x) - (xt * (w @ s_x) - s_xx @ w) + (s_y * xt - s_yx)
      gamma = t ** -theta / 14.0
      w = w - gamma / n * grad                          # w_{t+1}
      gamma_sum += gamma                                # sum_{j=2}^{t} gamma_j
      worst = max(worst, np.linalg.norm(w) / (2 * m * math.sqrt(gamma_sum)))
      s_x += xt
      s_y += yt
      s_xx += np.outer(xt, xt)
      s_yx += yt * xt
    print(f"   theta = {theta}: max_t ||w_t|| / (2 M sqrt(sum gamma)) = {worst:.4f} over "
          f"t <= {num_steps} (M = {m:.3f}); final ||w_T|| = {np.linalg.norm(w):.4f}, "
          f"||w*|| = {np.linalg.norm(problem.w_star):.4f}")


def main():
  check_step_lemma()
  check_unbiased_risk()
  check_thresholds()
  check_online_norm_bound()


if __name__ == "__main__":
  main()
