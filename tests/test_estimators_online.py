"""``OnlinePairwiseRanker``: partial_fit against ``fit_stream``, score against scikit-learn."""

import itertools

import numpy as np
import pytest
from sklearn import metrics as skm

from qsg_jax import online_pairwise
from qsg_jax.online_pairwise import estimator as ranker_lib


def test_partial_fit_continues_the_stream_like_fit_stream():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(120, 3))
  y = x @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=120)
  ranker = online_pairwise.OnlinePairwiseRanker(chunk_size=32, scale_inputs=False)
  ranker.partial_fit(x[:50], y[:50]).partial_fit(x[50:], y[50:])
  reference = online_pairwise.fit_stream([(x[:50], y[:50]), (x[50:], y[50:])], chunk_size=32)
  np.testing.assert_allclose(ranker.coef_, np.asarray(reference.state.w), rtol=1e-6, atol=1e-7)
  refit = online_pairwise.OnlinePairwiseRanker(chunk_size=32).fit(x, y)
  assert int(refit.state_.step) == 120
  binary = (y > 0).astype(int)
  assert ranker.score(x, binary) == pytest.approx(
      skm.roc_auc_score(binary, ranker.decision_function(x)), abs=1e-6)
  with pytest.raises(ValueError, match="X has 2 features, but OnlinePairwiseRanker is expecting 3"):
    ranker.partial_fit(x[:5, :2], y[:5])


def test_pairwise_ranking_accuracy_against_brute_force():
  rng = np.random.default_rng(1)
  scores = rng.integers(0, 4, size=30).astype(float)     # ties in scores
  targets = rng.integers(0, 5, size=30).astype(float)    # ties in targets
  right = total = 0.0
  for i, j in itertools.permutations(range(30), 2):
    if targets[i] > targets[j]:
      total += 1
      right += 1.0 if scores[i] > scores[j] else 0.5 if scores[i] == scores[j] else 0.0
  assert ranker_lib.pairwise_ranking_accuracy(scores, targets) == pytest.approx(right / total)
  with pytest.raises(ValueError, match="every target is"):
    ranker_lib.pairwise_ranking_accuracy(scores, np.ones(30))
