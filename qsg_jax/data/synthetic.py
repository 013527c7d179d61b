"""Synthetic ordinal and binary data with a known Bayes-optimal ranking score.

Inputs x ~ N(0, I_d), d >= 3. A latent value z = f*(x) + eps with

    f*(x) = x_1 + sin(2 x_2) + (x_3^2 - 1) / 2,    eps ~ N(0, noise^2) independent of x,

is cut at known thresholds b_1 < ... < b_{k-1}: y = #{j : z > b_j}. Features 4..d are pure noise.
For every split j, P(y > j | x) = Phi((f*(x) - b_j) / noise) increases with f*(x), so f* ranks
points optimally for each of the k-1 split AUCs at once, hence for the ordinal mean AUC
(QS3ORAO, Eq. 2); binary data is the k = 2 case. The thresholds default to
``latent_std * Phi^{-1}(j / k)`` with the exact standard deviation of z, which gives classes of
roughly equal size (exactly equal only if z were Gaussian).
"""

import math
import statistics

import numpy as np

from qsg_jax import _validation as validation
from qsg_jax.data.dataset import make_dataset
from qsg_jax.data.preprocessing import numpy_rng


def bayes_score(x):
  """The Bayes-optimal ranking score f*(x) = x_1 + sin(2 x_2) + (x_3^2 - 1) / 2.

  Args:
    x: [n, d] inputs, d >= 3.

  Returns:
    float64 [n].
  """
  x = np.asarray(x, dtype=np.float64)
  if x.ndim != 2 or x.shape[1] < 3:
    raise ValueError(f"x must have shape [n, d] with d >= 3; received {x.shape}.")
  return x[:, 0] + np.sin(2.0 * x[:, 1]) + 0.5 * (x[:, 2] ** 2 - 1.0)


def latent_std(noise):
  """Exact standard deviation of z = f*(x) + eps for x ~ N(0, I), eps ~ N(0, noise^2).

  Var x_1 = 1; Var sin(2 x_2) = (1 - E cos(4 x_2)) / 2 = (1 - e^-8) / 2; Var (x_3^2 - 1) / 2
  = 1/2; the three terms and eps are independent and have mean 0.
  """
  return math.sqrt(1.0 + 0.5 * (1.0 - math.exp(-8.0)) + 0.5 + float(noise) ** 2)


def latent_thresholds(num_classes, noise):
  """Default thresholds b_j = latent_std(noise) * Phi^{-1}(j / k), j = 1..k-1 (float64 [k-1])."""
  j = np.arange(1, int(num_classes))
  inv_cdf = np.vectorize(statistics.NormalDist().inv_cdf, otypes=[np.float64])
  return latent_std(noise) * inv_cdf(j / int(num_classes))


def sample_latent(key, num_points, num_features, noise):
  """Draws (x, f*(x), z): float64 [n, d], [n], [n]; a pure function of the key."""
  if int(num_features) < 3:
    raise ValueError(f"num_features must be >= 3 (f* uses x_1..x_3); received {num_features}.")
  if not noise > 0:
    raise ValueError(f"noise must be > 0 (it makes the classes overlap); received {noise}.")
  rng = numpy_rng(key)
  x = rng.standard_normal((int(num_points), int(num_features)))
  eps = rng.standard_normal(int(num_points))
  f = bayes_score(x)
  return x, f, f + float(noise) * eps


def make_ordinal(key=0, num_points=20_000, num_test=10_000, num_features=8, num_classes=5,
                 noise=1.0, thresholds=None, name="synthetic_ordinal"):
  """Ordinal data with k classes cut from a nonlinear latent score; f* returned alongside.

  Args:
    key: jax PRNG key or int seed; the data is a pure function of it.
    num_points: n training points.
    num_test: n_test test points drawn from the same distribution (0 for none).
    num_features: d >= 3 (features 4..d carry no signal).
    num_classes: k >= 2.
    noise: standard deviation of eps (> 0); smaller means easier.
    thresholds: [k-1] increasing cut points on z, default ``latent_thresholds(k, noise)``.
    name: the dataset's name.

  Returns:
    ``Dataset`` (task "ordinal", or "binary" when k = 2) with ``bayes_score`` = f*(x) and
    ``bayes_score_test`` = f*(x_test).
  """
  k = int(num_classes)
  if k < 2:
    raise ValueError(f"num_classes must be >= 2; received {num_classes}.")
  cuts = latent_thresholds(k, noise) if thresholds is None else np.asarray(thresholds, np.float64)
  if cuts.shape != (k - 1,) or np.any(np.diff(cuts) <= 0):
    raise ValueError(f"thresholds must be {k - 1} increasing values; received {cuts.tolist()}.")
  n = validation.check_count("num_points", num_points, minimum=1)
  n_test = validation.check_count("num_test", num_test, minimum=0)
  x, f, z = sample_latent(key, n + n_test, num_features, noise)
  y = np.searchsorted(cuts, z, side="left").astype(np.int64)
  test = dict(x_test=x[n:], y_test=y[n:], bayes_score_test=f[n:]) if n_test else {}
  task = "binary" if k == 2 else "ordinal"
  text = (f"Synthetic {task} data: x ~ N(0, I_{num_features}), z = x1 + sin(2 x2) + (x3^2 - 1)/2 "
          f"+ N(0, {noise}^2), y = #{{j: z > b_j}} with b = {np.round(cuts, 4).tolist()}; "
          "bayes_score = f*(x) is the Bayes-optimal ranking score.")
  return make_dataset(name, task, x[:n], y[:n], num_classes=k, description=text,
                      feature_names=tuple(f"x{i + 1}" for i in range(int(num_features))),
                      bayes_score=f[:n], **test)


def make_binary(key=0, num_points=20_000, num_test=10_000, num_features=8, noise=1.0,
                positive_fraction=0.3, name="synthetic_binary"):
  """Binary data y = 1[z > b], b set so that about ``positive_fraction`` of points are positive.

  Args:
    key: jax PRNG key or int seed.
    num_points: n training points.
    num_test: n_test test points (0 for none).
    num_features: d >= 3.
    noise: standard deviation of eps (> 0).
    positive_fraction: target share of positives in (0, 1) (approximate: z is not Gaussian).
    name: the dataset's name.

  Returns:
    ``Dataset`` (task "binary") with ``bayes_score`` = f*(x), the Bayes-optimal AUC ranking.
  """
  if not 0 < positive_fraction < 1:
    raise ValueError(f"positive_fraction must lie in (0, 1); received {positive_fraction}.")
  cut = latent_std(noise) * statistics.NormalDist().inv_cdf(1.0 - positive_fraction)
  return make_ordinal(key, num_points, num_test, num_features, 2, noise, thresholds=[cut],
                      name=name)
