"""The synthetic models' noise scale: draws, class balance and population AUC against references."""

import math

import jax
import numpy as np
import pytest
from scipy import integrate
from scipy import stats

from qsg_jax.roc_svm import synthetic


def _reference_auc(model, noise_sd, negative_fraction=0.8):
  """P(f(X+) > f(X-)) with eps ~ N(0, s^2), by SciPy's distributions and an independent grid."""
  alpha = synthetic.offset_for_negative_fraction(model, negative_fraction, noise_sd)
  if model == "linear":
    density, t = stats.norm(0, math.sqrt(2)).pdf, np.linspace(-12.0, 12.0, 200001)
  else:
    density, t = stats.expon(scale=2.0).pdf, np.linspace(0.0, 60.0, 200001)
  p_pos = density(t) * stats.norm.cdf((alpha + t) / noise_sd)
  p_neg = density(t) * stats.norm.sf((alpha + t) / noise_sd)
  f_neg = integrate.cumulative_trapezoid(p_neg, t, initial=0.0)
  return integrate.trapezoid(p_pos * f_neg, t) / (integrate.trapezoid(p_pos, t)
                                                  * integrate.trapezoid(p_neg, t))


@pytest.mark.parametrize("model", synthetic.MODELS)
def test_unit_noise_draws_the_points_of_the_paper_generator(key, model):
  x0, y0 = synthetic.generate(key, 3000, model)
  x1, y1 = synthetic.generate(key, 3000, model, noise_sd=1.0)
  np.testing.assert_array_equal(np.asarray(x0), np.asarray(x1))
  np.testing.assert_array_equal(np.asarray(y0), np.asarray(y1))


@pytest.mark.parametrize("model,noise_sd", [("linear", 1.7), ("radial", 1.5734), ("radial", 0.6)])
def test_latent_cdf_matches_monte_carlo(model, noise_sd):
  rng = np.random.default_rng(1)
  x = rng.normal(size=(400000, 2))
  f = x.sum(axis=1) if model == "linear" else np.sum(x * x, axis=1)
  w = f + noise_sd * rng.normal(size=400000)
  for t in (-1.0, 0.5, 2.0, 4.0):
    np.testing.assert_allclose(synthetic.latent_cdf(model, t, noise_sd), np.mean(w <= t),
                               atol=0.003)


@pytest.mark.parametrize("model", synthetic.MODELS)
def test_paper_auc_noise_sd_reproduces_the_published_population_auc(model):
  noise_sd = synthetic.noise_sd_for_auc(model, synthetic.PAPER_POPULATION_AUC[model])
  np.testing.assert_allclose(noise_sd, synthetic.PAPER_AUC_NOISE_SD[model], atol=1e-4)
  auc = synthetic.population_auc_quadrature(model, 0.8,
                                            noise_sd=synthetic.PAPER_AUC_NOISE_SD[model])
  np.testing.assert_allclose(auc, synthetic.PAPER_POPULATION_AUC[model], atol=2e-5)
  np.testing.assert_allclose(auc, _reference_auc(model, synthetic.PAPER_AUC_NOISE_SD[model]),
                             atol=2e-5)


def test_noisy_radial_generator_keeps_eighty_percent_negatives_and_its_auc(key):
  noise_sd = synthetic.PAPER_AUC_NOISE_SD["radial"]
  _, y = synthetic.generate(key, 100000, "radial", noise_sd=noise_sd)
  assert abs(float(1 - np.mean(y)) - 0.8) < 0.0065                # ~5 standard errors
  mean, se = synthetic.population_auc(key, "radial", 400000, noise_sd=noise_sd)
  assert abs(mean - synthetic.PAPER_POPULATION_AUC["radial"]) < max(4 * se, 1e-3)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), "1"])
def test_bad_noise_sd_is_refused(bad):
  with pytest.raises(ValueError, match="noise_sd must be a positive finite number"):
    synthetic.offset_for_negative_fraction("radial", 0.8, bad)


def test_unreachable_auc_is_refused():
  with pytest.raises(ValueError, match="no noise_sd"):
    synthetic.noise_sd_for_auc("radial", 0.999)
