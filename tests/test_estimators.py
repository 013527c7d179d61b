"""scikit-learn style estimators: the semi-supervised convention, clone, scores."""

import numpy as np
import pytest
from sklearn import base
from sklearn import metrics as skm

from qsg_jax import estimators


def _data(n=600, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.random((n, 3))
  latent = 2 * x[:, 0] + np.sin(4 * x[:, 1])
  y = np.digitize(latent, np.quantile(latent, [0.33, 0.66])) * 10 + 10   # classes 10, 20, 30
  y_semi = y.copy()
  y_semi[100:] = -1
  return x, y, y_semi


def test_ordinal_estimator_fits_predicts_and_scores():
  x, y, y_semi = _data()
  model = estimators.QS3ORAO(sigma=2.0, step_size=2.0, num_steps=128, num_frequencies=16)
  model.fit(x, y_semi)
  np.testing.assert_array_equal(model.classes_, [10, 20, 30])
  assert set(np.unique(model.predict(x))) <= {10, 20, 30}
  scores = model.decision_function(x[100:])
  expected = np.mean([skm.roc_auc_score(y[100:] > c, scores) for c in (10, 20)])
  assert model.score(x[100:], y[100:]) == pytest.approx(expected, abs=1e-5)
  assert expected > 0.85
  clone = base.clone(model)
  assert clone.get_params() == model.get_params() and not hasattr(clone, "result_")


def test_binary_estimator_and_errors():
  x, y, y_semi = _data()
  binary = np.where(y_semi == -1, -1, (y_semi > 10).astype(int))
  model = estimators.QSGS2AUC(sigma=2.0, step_size=1.0, num_steps=64, num_frequencies=8).fit(x, binary)
  assert model.score(x, (y > 10).astype(int)) > 0.8
  with pytest.raises(ValueError, match="exactly 2 labeled classes"):
    estimators.QSGS2AUC(num_steps=8).fit(x, y_semi)
  with pytest.raises(ValueError, match="labels outside the fitted classes"):
    model.score(x[:5], np.array([0, 1, 2, 0, 1]))
  with pytest.raises(ValueError, match="at least 2 classes"):
    estimators.QS3ORAO(num_steps=8).fit(x, np.where(y_semi == -1, -1, 10))
