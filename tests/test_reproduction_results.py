"""The drivers of experiments/reproduction/RESULTS.md: references and tiny runs."""

import json
import math

import numpy as np
import pytest

from experiments.reproduction import lemma_checks
from experiments.reproduction import online_bound_constant
from experiments.reproduction import pnu_prior
from experiments.reproduction import theorem1_minibatch
from qsg_jax import online_pairwise


def test_step_coefficients_against_the_literal_product():
  theta, lam, t = 3.0, 0.5, 7
  a = lemma_checks.lemma_step_coefficients(theta, lam, t)
  for i in range(1, t + 1):
    literal = theta / i * math.prod(1.0 - theta / j * lam for j in range(i + 1, t + 1))
    np.testing.assert_allclose(a[i - 1], abs(literal), rtol=1e-12)
  assert a.max() <= theta / t * (1 + 1e-12) and np.sum(a * a) <= theta ** 2 / t


def test_online_constant_is_the_papers_formula_at_a_hand_checked_point():
  # theta = 0.75, kappa = 2, M = 1, lambda_rho = 1, mu = 5: the printed formula term by term.
  theta, kappa, m, lam, mu = 0.75, 2.0, 1.0, 1.0, 5.0
  q = 1 - 2 ** (theta - 1)
  inner = (2 + mu * 2 ** (2.5 * theta) / lam
           + ((mu * (2 + 3 * theta) / (2 * lam * q * math.e))
              ** ((2 + 3 * theta) / (2 * (1 - theta))))
           + mu * 2 ** (4 * theta - 1) / (2 * lam)
           + (3 * mu * theta / (2 * lam * q * math.e)) ** (3 * theta / (1 - theta)))
  expected = ((12 * math.sqrt(2) + 128 / 3) * (1 + kappa) * kappa * m
              * max(1, 1 / (mu * (1 - theta))) / mu * math.sqrt(inner)
              + 2 * kappa * m / lam * math.exp(2 * lam / (mu * (1 - theta)))
              * ((mu * (2 * theta - 1) / (2 * lam * math.e))
                 ** ((2 * theta - 1) / (2 * (1 - theta)))))
  np.testing.assert_allclose(online_bound_constant.constant(theta, kappa, m, lam, mu), expected,
                             rtol=1e-12)


def test_sup_abs_label_bounds_every_sampled_label(key):
  problem = online_pairwise.make_linear_problem(seed=0, dim=10, rank=3)
  _, y = online_pairwise.sample_linear(problem, key, 20000)
  m = online_bound_constant.sup_abs_label(problem)
  assert float(np.max(np.abs(np.asarray(y)))) <= m
  assert float(np.max(np.abs(np.asarray(y)))) > 0.8 * m     # and it is nearly attained


def test_pnu_prior_reproduces_the_published_trials(tmp_path):
  settings = pnu_prior.Settings(datasets=("breast_cancer",), trials=2,
                                output_dir=str(tmp_path / "pnu"))
  summary = pnu_prior.run(settings, log=lambda line: None)[0]
  stored = json.loads((tmp_path / "pnu" / "pnu_prior.json").read_text())
  rows = stored["trials"]["breast_cancer"]
  # Trials 0 and 1 of the papers'-protocol run (semisupervised_auc.md): labeled prior, same AUC.
  np.testing.assert_allclose([r["auc_labeled"] for r in rows], [0.9789, 1.0], atol=5e-5)
  for r in rows:
    assert 0 < r["prior_training"] < 1 and r["prior_labeled"] in (0.42, 0.39)
  assert summary["difference [SE]"].startswith(("+0.0000", "-0.0000"))


@pytest.mark.slow
def test_theorem1_minibatch_samples_labeled_points(tmp_path):
  settings = theorem1_minibatch.Settings(num_classes=2, max_steps=128, seeds=1, fit_from=64,
                                         labeled_batch_size=2, output_dir=str(tmp_path / "c"))
  payload = theorem1_minibatch.run(settings, log=lambda line: None)
  stored = json.loads((tmp_path / "c" / "convergence.json").read_text())
  assert stored["settings"]["labeled_batch_size"] == 2
  assert math.isfinite(payload["slope"])
