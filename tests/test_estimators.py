"""scikit-learn style estimators: the semi-supervised convention, clone, scores."""

import numpy as np
import pytest
import scipy.sparse
from sklearn import base
from sklearn import metrics as skm
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from qsg_jax import estimators
from tests import _cv_data


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
  model = estimators.QS3ORAO(sigma=2.0, step_size=2.0, num_steps=128, num_frequencies=16,
                             random_state=0)   # seeded: the AUC of 128 steps varies by seed
  model.fit(x, y_semi)
  np.testing.assert_array_equal(model.classes_, [10, 20, 30])
  assert set(np.unique(model.predict(x))) <= {10, 20, 30}
  scores = model.decision_function(x[100:])
  expected = np.mean([skm.roc_auc_score(y[100:] > c, scores) for c in (10, 20)])
  assert model.score(x[100:], y[100:]) == pytest.approx(expected, abs=1e-5)
  assert expected > 0.85
  clone = base.clone(model)
  assert clone.get_params() == model.get_params() and not hasattr(clone, "model_")


def test_binary_estimator_and_errors():
  x, y, y_semi = _data()
  binary = np.where(y_semi == -1, -1, (y_semi > 10).astype(int))
  model = estimators.QSGS2AUC(sigma=2.0, step_size=1.0, num_steps=64, num_frequencies=8,
                              unlabeled_label=-1)
  model.fit(x, binary)
  assert model.score(x, (y > 10).astype(int)) > 0.8
  with pytest.raises(ValueError, match="exactly 2 labeled classes"):
    estimators.QSGS2AUC(num_steps=8).fit(x, y_semi)
  with pytest.raises(ValueError, match=r"labels \[2\] outside the fitted classes"):
    model.score(x[:5], np.array([0, 1, 2, 0, 1]))
  with pytest.raises(ValueError, match="at least 2 classes"):
    estimators.QS3ORAO(num_steps=8).fit(x, np.where(y_semi == -1, -1, 10))


_FAST = dict(sigma=2.0, step_size=1.0, num_steps=64, num_frequencies=8, random_state=0)


def test_labels_that_would_silently_become_classes_are_refused():
  x, _, y_semi = _data(n=120)
  model = estimators.QS3ORAO(**_FAST)
  with_nan = y_semi.astype(float)
  with_nan[7] = np.nan
  with pytest.raises(ValueError, match=r"1 NaN / NA labels \(first at row 7\).*Mark unlabeled"):
    model.fit(x, with_nan)
  with pytest.raises(ValueError, match=r"y\[100\] = '-1' \(str\) looks like the unlabeled marker"):
    model.fit(x, y_semi.astype(str))
  as_objects = y_semi.astype(object)
  as_objects[100] = "-1"
  with pytest.raises(ValueError, match="looks like the unlabeled marker"):
    model.fit(x, as_objects)
  with pytest.raises(ValueError, match="looks like the unlabeled marker"):
    estimators.QS3ORAO(unlabeled_label="-1", **_FAST).fit(x, y_semi.astype(float))
  # The marker given with the labels' own type works.
  strings = estimators.QS3ORAO(unlabeled_label="-1", **_FAST).fit(x, y_semi.astype(str))
  np.testing.assert_array_equal(strings.classes_, ["10", "20", "30"])
  # k > 2 string classes whose alphabetical order is not (or may not be) the ordinal one.
  for names in (["1", "2", "10"], ["low", "medium", "high"]):
    words = np.where(y_semi < 0, "-1", np.array(names)[(y_semi - 10) // 10 % 3])
    with pytest.raises(ValueError, match="sorted order is alphabetical"):
      estimators.QS3ORAO(unlabeled_label="-1", **_FAST).fit(x, words)


def test_fully_labeled_y_is_a_supervised_fit_and_pipelines_with_defaults_work():
  x, y, _ = _data(n=200)
  x = x * 1000.0 - 3.0   # far outside [0, 1]: the estimator min-max scales inside
  model = estimators.QS3ORAO(num_steps=256, random_state=0)   # default step size
  model.fit(x, y)
  assert model.score(x, y) > 0.8
  pipeline = make_pipeline(StandardScaler(), estimators.QS3ORAO(num_steps=256, random_state=0))
  assert pipeline.fit(x, y).score(x, y) > 0.8     # once raised DivergenceError


def test_input_validation_through_sklearn():
  pd = pytest.importorskip("pandas")
  x, _, y_semi = _data(n=120)
  model = estimators.QS3ORAO(**_FAST)
  with pytest.raises(NotFittedError, match="not fitted yet"):
    model.predict(x)
  with pytest.raises(TypeError, match=r"dense data is required. Use '.toarray\(\)'"):
    model.fit(scipy.sparse.csr_matrix(x), y_semi)
  frame = pd.DataFrame(x, columns=["a", "b", "c"])
  model.fit(frame, y_semi)
  np.testing.assert_array_equal(model.feature_names_in_, ["a", "b", "c"])
  plain = estimators.QS3ORAO(**_FAST).fit(x, y_semi)
  np.testing.assert_array_equal(model.decision_function(frame), plain.decision_function(x))
  with pytest.raises(ValueError, match="Feature names must be in the same order as they were"):
    model.predict(frame[["b", "a", "c"]])
  with pytest.raises(ValueError, match="X has 2 features, but QS3ORAO is expecting 3"):
    plain.predict(x[:, :2])


def test_random_state_conventions_and_binary_decision_sign():
  x, y, _ = _data(n=120)
  binary = (y > 10).astype(int)
  fresh = [estimators.QSGS2AUC(**dict(_FAST, random_state=None)).fit(x, binary).seed_
           for _ in range(2)]
  assert fresh[0] != fresh[1]
  seeded = estimators.QSGS2AUC(**dict(_FAST, random_state=np.random.RandomState(5)))
  assert seeded.fit(x, binary).seed_ == np.random.RandomState(5).randint(np.iinfo(np.int32).max)
  model = estimators.QSGS2AUC(**_FAST).fit(x, np.where(binary == 1, "yes", "no"))
  decision = model.decision_function(x)
  np.testing.assert_array_equal(model.predict(x), model.classes_[(decision > 0).astype(int)])
  assert model.classes_[1] == "yes"
  assert model.score(x, np.where(binary == 1, "yes", "no")) == pytest.approx(
      skm.roc_auc_score(binary, decision), abs=1e-6)


def test_a_minus_one_that_could_be_a_class_needs_an_explicit_marker():
  """Sentiment -1 / 0 / +1: the default "auto" marker must not drop the class -1 silently."""
  x, y, _ = _data(n=150)
  sentiment = y // 10 - 2                                   # classes -1, 0, 1
  with pytest.raises(ValueError, match=r"rows -1 and the classes \[0, 1\].*unlabeled_label=None"):
    estimators.QS3ORAO(**_FAST).fit(x, sentiment)
  three = estimators.QS3ORAO(unlabeled_label=None, **_FAST).fit(x, sentiment)
  np.testing.assert_array_equal(three.classes_, [-1, 0, 1])
  expected = np.mean([skm.roc_auc_score(sentiment > c, three.decision_function(x))
                      for c in (-1, 0)])
  assert three.score(x, sentiment) == pytest.approx(expected, abs=1e-6)   # no row dropped
  two = estimators.QS3ORAO(unlabeled_label=-1, **_FAST).fit(x, sentiment)
  np.testing.assert_array_equal(two.classes_, [0, 1])
  with pytest.raises(ValueError, match="could also be an ordered class below 0"):
    estimators.ordinal_auc_scorer(two.set_params(unlabeled_label="auto"), x, sentiment)
  # Classes 1..k leave no doubt: -1 marks unlabeled rows.
  one_based = estimators.QS3ORAO(**_FAST).fit(x, np.where(sentiment < 0, -1, sentiment + 1))
  np.testing.assert_array_equal(one_based.classes_, [1, 2])


def test_a_failed_refit_leaves_the_fitted_estimator_as_it_was():
  x, _, y_semi = _data(n=150)
  model = estimators.QS3ORAO(**_FAST).fit(x, y_semi)
  before = model.decision_function(x)
  state = {k: v for k, v in vars(model).items() if k.endswith("_")}
  with pytest.raises(ValueError, match="gamma must lie in"):
    model.set_params(gamma=2.0).fit(x * 1000 + 5, y_semi)       # new scaling, then a bad gamma
  with pytest.raises(ValueError, match="only one class"):     # after X of 2 features was read
    model.set_params(gamma=0.5).fit(x[:, :2], np.where(y_semi == -1, -1, 10))
  assert {k for k in vars(model) if k.endswith("_")} == set(state) and model.n_features_in_ == 3
  np.testing.assert_array_equal(model.input_min_, state["input_min_"])
  np.testing.assert_array_equal(model.decision_function(x), before)


@pytest.mark.parametrize("change, message", [
    (lambda x, y: (x[:, 0], y), r"X must be 2-D \[n_samples, n_features\]; received shape"),
    (lambda x, y: (np.where(np.arange(90)[:, None] == 7, np.nan, x), y),
     r"X contains NaN or inf: 1 rows, the first at row 7 \(column 0"),
    (lambda x, y: (np.c_[x[:, :2], np.where(np.arange(90) % 2, 1e308, -1e308)], y),
     "column 2 spans more than float64 holds"),
])
def test_estimator_input_errors_are_short_and_name_the_row(change, message):
  x, _, y_semi = _cv_data.semi_ordinal()
  with pytest.raises(ValueError, match=message) as error:
    estimators.QS3ORAO(unlabeled_label=-1, **_cv_data.TINY).fit(*change(x, y_semi))
  assert len(str(error.value)) < 300


@pytest.mark.parametrize("params, message", [
    (dict(scale_inputs="no"), "scale_inputs must be True or False"),
    (dict(random_state=-1), "random_state must be an int >= 0"),
    (dict(unlabeled_label=np.nan), "unlabeled_label=nan is not supported"),
])
def test_estimator_parameters_are_checked(params, message):
  x, _, y_semi = _cv_data.semi_ordinal()
  with pytest.raises(ValueError, match=message):
    estimators.QS3ORAO(**dict(dict(unlabeled_label=-1, **_cv_data.TINY), **params)).fit(x, y_semi)


def test_gamma_is_checked_on_fully_labeled_data_too():
  x, y, _ = _cv_data.semi_ordinal()
  with pytest.raises(ValueError, match=r"gamma must lie in \[0, 1\]"):
    estimators.QS3ORAO(unlabeled_label=-1, gamma=5, **_cv_data.TINY).fit(x, y)
