r"""Theorem 1 of the online pairwise paper evaluated with its explicit constant on our data.

  python -m experiments.reproduction.online_bound_constant

Theorem 1 (Boissier, Lyu, Ying, Zhou): with probability 1 - delta,
    ||w_{T+1} - w*||^2 <= Cbar^2 T^-(2 theta - 1) log^2(4 T / delta),
with Cbar = Cbar(theta, rho, mu) written out at the end of the proof (it needs kappa, M = sup |y|,
lambda_rho and mu). This prints Cbar and the bound at T = 10^6 for the rate experiment's data
(``online_pairwise.make_linear_problem(seed=0, dim=10, rank=3)``, mu = 14, the script
``experiments.online_pairwise_rate``'s defaults) beside the measured errors of
``experiments/reproduction/online_pairwise.md``, so the theorem is checked as an inequality, not
only as a slope.
"""

import math

import numpy as np

from qsg_jax import online_pairwise

MEASURED_AT_1E6 = {0.6: 5.72e-6, 0.75: 1.37e-6, 0.9: 3.03e-4}   # online_pairwise.md, 30 streams


def sup_abs_label(problem):
  """M = sup |y| on the support: x = m + B diag(s) z, ||z|| = sqrt(r), eps in [-noise, noise]."""
  rank = problem.basis.shape[1]
  centre = float(problem.w_true @ problem.offset) + problem.intercept
  along = problem.scales * (problem.basis.T @ problem.w_true)
  spread = math.sqrt(rank) * float(np.linalg.norm(along))
  return abs(centre) + spread + problem.noise


def constant(theta, kappa, m, lambda_rho, mu):
  """Cbar(theta, rho, mu) exactly as printed at the end of the paper's proof of Theorem 1."""
  q = 1.0 - 2.0 ** (theta - 1.0)
  a = mu * 2.0 ** (2.5 * theta) / lambda_rho
  b = ((mu * (2 + 3 * theta) / (2 * lambda_rho * q * math.e))
       ** ((2 + 3 * theta) / (2 * (1 - theta))))
  c = mu * 2.0 ** (4 * theta - 1) / (2 * lambda_rho)
  d = (3 * mu * theta / (2 * lambda_rho * q * math.e)) ** (3 * theta / (1 - theta))
  first = ((12 * math.sqrt(2) + 128 / 3) * (1 + kappa) * kappa * m
           * max(1.0, 1.0 / (mu * (1 - theta))) / mu * math.sqrt(2 + a + b + c + d))
  second = (2 * kappa * m / lambda_rho * math.exp(2 * lambda_rho / (mu * (1 - theta)))
            * (mu * (2 * theta - 1) / (2 * lambda_rho * math.e))
            ** ((2 * theta - 1) / (2 * (1 - theta))))
  return first + second


def main():
  problem = online_pairwise.make_linear_problem(seed=0, dim=10, rank=3)
  mu, m = 14.0, sup_abs_label(problem)
  print(f"kappa = {problem.kappa:.4f}, lambda_rho = {problem.lambda_rho:g}, mu = {mu:g}, "
        f"M = sup|y| = {m:.4f}")
  t, delta = 1e6, 0.05
  for theta, measured in MEASURED_AT_1E6.items():
    cbar = constant(theta, problem.kappa, m, problem.lambda_rho, mu)
    bound = cbar ** 2 * t ** -(2 * theta - 1) * math.log(4 * t / delta) ** 2
    print(f"theta = {theta}: Cbar = {cbar:.3e}; bound at T = 1e6, delta = {delta}: "
          f"{bound:.3e}; measured mean ||w_T - w*||^2 = {measured:.2e}; "
          f"bound / measured = {bound / measured:.1e}")


if __name__ == "__main__":
  main()
