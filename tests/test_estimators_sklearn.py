"""scikit-learn's own estimator checks (``parametrize_with_checks``) on the estimators."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from qsg_jax import estimators

_SMALL = dict(num_steps=32, num_frequencies=8, unlabeled_batch_size=16, random_state=0)


@parametrize_with_checks([estimators.QS3ORAO(**_SMALL), estimators.QSGS2AUC(**_SMALL)])
def test_sklearn_compatible(estimator, check):
  check(estimator)
