"""``ROCSVM``: the incomplete-U ROC-SVM as a scikit-learn classifier (linear or Nystrom kernel).

It wraps ``qsg_jax.roc_svm.fit``: the pairwise hinge risk over B = n random (positive, negative)
pairs (Bae and Shin, Eq. 7; Eq. 12 on Nystrom features), solved by L-BFGS by default.

What the methods mean:
  * ``decision_function(X)``: the learned score f(x) - t, higher for ``classes_[1]``; the
    pairwise objective does not identify an intercept, so t is fitted afterwards (below).
  * ``predict(X)``: ``classes_[1]`` where ``decision_function(X) > 0``. The threshold t is
    chosen on the training scores: by default (``threshold="accuracy"``) the one with the
    highest training accuracy; ``threshold="sensitivity"`` / ``"specificity"`` meets the target
    rate ``target_rate`` on the training points (paper Sec. 2.2).
  * ``score(X, y)``: the AUC of ``decision_function`` (ties count 1/2), the quantity the
    ROC-SVM maximizes; not the accuracy of ``predict``.

Scaling, the rule of every estimator of the package (``QSGS2AUC``, ``OnlinePairwiseRanker``):
with ``scale_inputs=True`` (default) each feature is min-max scaled, x' = (x - input_min_) /
input_scale_, by ``qsg_jax.data.minmax_fit`` on the training rows, and the same map is applied
in ``decision_function``; the model (``model_``, ``coef_``, ``sigma_``) lives on x'. Unscaled
features break the Nystrom kernel silently (AUC 0.47 with ``converged_=True`` on features in the
thousands). Every input dtype (int, bool, float16, pandas nullable) is read as float64.
"""

import inspect
import warnings

import numpy as np
from sklearn import base
from sklearn import metrics as skmetrics
from sklearn.utils import check_random_state
from sklearn.utils import multiclass
from sklearn.utils import validation as skvalidation

from qsg_jax import errors
from qsg_jax import _validation as validation
from qsg_jax.data import preprocessing
from qsg_jax.roc_svm import model as model_lib
from qsg_jax.roc_svm import train as train_lib

ESTIMATOR_KERNELS = ("linear", "nystrom")
_DEFAULT_LANDMARKS = 300   # ROCSVM's num_landmarks default (the paper's d)
THRESHOLDS = ("accuracy", "sensitivity", "specificity")

__docformat__ = "numpy"


def median_heuristic_sigma(rng, x, num=2000):
  """sigma = 1 / median squared distance between ``num`` random pairs of distinct rows."""
  a = x[rng.integers(0, x.shape[0], num)]
  b = x[rng.integers(0, x.shape[0], num)]
  d2 = np.sum(np.square(a - b), axis=1)
  d2 = d2[d2 > 0]
  return 1.0 / max(float(np.median(d2)), 1e-12) if d2.size else 1.0


def _isin(values, classes):
  """[n] bool: which of ``values`` equal one of ``classes``, by value (a label of another type
  than the classes, e.g. an int against text, equals none: NumPy cannot even sort them)."""
  try:
    return np.isin(values, classes)
  except TypeError:
    wanted = set(np.asarray(classes).tolist())
    return np.array([v in wanted for v in np.asarray(values).tolist()], bool)


def accuracy_threshold(scores, positive):
  """The threshold t maximizing the accuracy of ``scores > t`` (midway between scores).

  Args:
    scores: [n] training scores.
    positive: [n] bool, the positive class.

  Returns:
    t as a float; ties between thresholds go to the smallest.
  """
  order = np.argsort(scores, kind="stable")
  s, pos = scores[order], positive[order]
  # Cut after the first k sorted points (k = 0..n): they are predicted negative.
  correct = np.concatenate([[0], np.cumsum(~pos)]) + np.concatenate(
      [[pos.sum()], pos.sum() - np.cumsum(pos)])
  distinct = np.concatenate([s[1:] > s[:-1], [True]])   # a cut only between distinct scores
  valid = np.concatenate([[True], distinct])
  k = int(np.argmax(np.where(valid, correct, -1)))
  if k == 0:
    return float(s[0] - 1.0)
  if k == s.size:
    return float(s[-1])
  return float(0.5 * (s[k - 1] + s[k]))


class ROCSVM(base.ClassifierMixin, base.BaseEstimator):
  """Incomplete-U ROC-SVM (AUC-maximizing SVM) for two classes, linear or Nystrom-kernel.

  Minimizes the pairwise hinge risk over B random (positive, negative) pairs plus lam/2 ||w||^2
  (Bae and Shin, Eq. 7; Eq. 12 on Nystrom features), by L-BFGS by default
  (``qsg_jax.roc_svm.fit``), then fits a threshold for ``predict``.

  Parameters
  ----------
  kernel : {"linear", "nystrom"}, default="linear"
      "nystrom": the Gaussian kernel through ``num_landmarks`` landmarks.
  lam : float, default=1e-3
      Ridge lambda >= 0 (Eq. 7).
  sigma : float or "median", default="median"
      Gaussian kernel parameter of k(x, z) = exp(-sigma ||x - z||^2) on the scaled inputs: what
      scikit-learn's SVC calls ``gamma`` (``QS3ORAO``'s length_scale l is sigma = 1 / (2 l^2)).
      "median": 1 / the median squared distance between training points. Nystrom only: with
      the linear kernel a value other than the default is refused (``SVC`` ignores ``gamma``
      there without a word), as are ``num_landmarks`` and ``landmarks``.
  num_landmarks : int, default=300
      Landmarks d >= 1 of the Nystrom features (the paper's 300); at most the number of
      training points: with fewer points every point is a landmark (a warning when the value
      was set, none for the default).
  landmarks : {"kmeans", "stratified", "uniform"}, default="kmeans"
      How the landmarks are chosen ("kmeans": the paper's, on real data).
  loss : {"hinge", "squared_hinge", "logistic"}, default="hinge"
      Pairwise loss ("hinge" is the paper's).
  num_pairs : int or None, default=None
      B >= 1 random pairs; None: B = n, the number of training points.
  optimizer : "lbfgs", "adamax" or optax.GradientTransformation, default="lbfgs"
      "adamax" is the paper's; any optax transformation works.
  learning_rate : float or None, default=None
      Adamax's rate (optimizer="adamax" only; None: its default).
  max_steps : int, default=2000
      Most optimizer steps (a whole number >= 1).
  tol : float, default=1e-6
      Stopping tolerance of ``qsg_jax.roc_svm.fit`` (a finite number >= 0).
  threshold : {"accuracy", "sensitivity", "specificity"}, default="accuracy"
      How ``predict``'s threshold is fitted on the training scores: the highest training
      accuracy, or the one meeting ``target_rate`` (paper Sec. 2.2).
  target_rate : float, default=0.9
      The target sensitivity or specificity, in (0, 1]; with threshold="accuracy" a value
      other than the default is refused (it would have no effect).
  scale_inputs : bool, default=True
      Min-max scale each feature on the training rows (module docstring); set False only for
      features already in [0, 1].
  random_state : int, RandomState instance or None, default=None
      Seed of the pairs, the landmarks and the median's sample.

  Attributes
  ----------
  classes_ : ndarray of shape (2,)
      The two classes; ``classes_[1]`` is the positive one.
  model_ : qsg_jax.roc_svm.RocSvmModel
      The fitted model on the scaled inputs.
  coef_ : ndarray of shape (n_features,)
      Weights w of f(x') = w . x' on the scaled inputs (kernel="linear" only).
  threshold_ : float
      The threshold t of ``predict`` on f.
  sigma_ : float or None
      The kernel parameter used ("median" resolved); None with the linear kernel.
  input_min_, input_scale_ : ndarray of shape (n_features,)
      The min-max map x' = (x - input_min_) / input_scale_ (zeros and ones when
      ``scale_inputs=False``).
  n_iter_ : int
      Optimizer steps taken.
  converged_ : bool
      Whether the stopping rule was met before ``max_steps``.
  objective_ : float
      The final value of the objective.
  n_features_in_ : int
      Number of features seen in ``fit``.
  feature_names_in_ : ndarray of shape (n_features_in_,)
      Column names of X, set only when X is a DataFrame with string column names.

  Notes
  -----
  ``decision_function`` is f(x) - t, higher for ``classes_[1]``; ``score`` is its AUC (the
  quantity the ROC-SVM maximizes), not the accuracy of ``predict``.

  Examples
  --------
  >>> import numpy as np
  >>> from qsg_jax.roc_svm import ROCSVM
  >>> rng = np.random.default_rng(0)
  >>> x = rng.normal(size=(200, 2)); y = np.where(x[:, 0] + x[:, 1] > 0, "yes", "no")
  >>> clf = ROCSVM(random_state=0).fit(x, y)
  >>> bool(clf.score(x, y) > 0.95)   # score is the AUC of decision_function
  True
  """

  def __init__(self, kernel="linear", *, lam=1e-3, sigma="median",
               num_landmarks=_DEFAULT_LANDMARKS,
               landmarks="kmeans", loss="hinge", num_pairs=None, optimizer="lbfgs",
               learning_rate=None, max_steps=2000, tol=1e-6, threshold="accuracy",
               target_rate=0.9, scale_inputs=True, random_state=None):
    self.kernel = kernel
    self.lam = lam
    self.sigma = sigma
    self.num_landmarks = num_landmarks
    self.landmarks = landmarks
    self.loss = loss
    self.num_pairs = num_pairs
    self.optimizer = optimizer
    self.learning_rate = learning_rate
    self.max_steps = max_steps
    self.tol = tol
    self.threshold = threshold
    self.target_rate = target_rate
    self.scale_inputs = scale_inputs
    self.random_state = random_state

  def __sklearn_tags__(self):
    tags = super().__sklearn_tags__()
    tags.classifier_tags.multi_class = False    # binary only: 3 classes are refused
    tags.classifier_tags.poor_score = True      # 'score' is the AUC, not the accuracy
    return tags

  def _check_params(self):
    if self.kernel not in ESTIMATOR_KERNELS:
      raise ValueError(f"ROCSVM kernel must be one of {ESTIMATOR_KERNELS}; received "
                       f"{self.kernel!r}. (The exact Gaussian kernel is qsg_jax.roc_svm.fit("
                       "kernel='gaussian').)")
    if self.threshold not in THRESHOLDS:
      raise ValueError(f"threshold must be one of {THRESHOLDS}; received {self.threshold!r}.")
    if not (isinstance(self.sigma, str) and self.sigma == "median"):
      if isinstance(self.sigma, str):
        raise ValueError(f"sigma must be a number > 0 or 'median'; received {self.sigma!r:.60}.")
      validation.check_positive("sigma", self.sigma, what="a number > 0 or 'median'")
    model_lib.check_lam(self.lam)   # numbers float32 holds (inf there: a NaN objective)
    if self.learning_rate is not None:
      train_lib.check_learning_rate(self.learning_rate)
    # Whole numbers (never truncated) and a finite tol, checked before the data.
    model_lib.check_counts(num_landmarks=self.num_landmarks, num_pairs=self.num_pairs,
                           max_steps=self.max_steps)
    model_lib.check_tol(self.tol)
    train_lib.check_rate("target_rate", self.target_rate)
    if not isinstance(self.scale_inputs, (bool, np.bool_)):
      raise TypeError(f"scale_inputs must be True or False; received {self.scale_inputs!r:.60}.")
    self._refuse_parameters_that_do_not_apply()

  def _refuse_parameters_that_do_not_apply(self):
    """A parameter set away from its default where it has no effect is an error, not ignored."""
    defaults = {name: p.default for name, p in
                inspect.signature(type(self).__init__).parameters.items()}
    given = lambda *names: {name: (getattr(self, name), defaults[name]) for name in names}
    if self.kernel == "linear":
      validation.refuse_ignored(given("sigma", "num_landmarks", "landmarks"), "kernel='linear'",
                                "kernel='nystrom'")
    if self.threshold == "accuracy":
      validation.refuse_ignored(given("target_rate"), "threshold='accuracy'",
                                "threshold='sensitivity' or 'specificity'")

  def fit(self, X, y):
    """Fits the ROC-SVM on ``X`` [n, p] and two-class labels ``y`` [n]; returns self.

    A fit that fails (bad input, a failed training) leaves the estimator as it was.
    """
    with validation.fitted_state_kept_on_error(self):
      return self._fit(X, y)

  def _fit(self, X, y):
    self._check_params()
    validation.check_features(X, training=True)   # short errors naming the row or column
    if y is not None:
      validation.refuse_unreadable("y", y)   # a masked y: its mask would be read through
      validation.refuse_mixed_labels(y)   # 0 and "1": scikit-learn's "Unknown label type"
    with np.errstate(over="ignore", invalid="ignore"):   # its finite check sums huge values
      X, y = skvalidation.validate_data(self, X, y, dtype=np.float64)
    y = validation.unbox_numbers(y)   # ints kept as objects: scikit-learn's "unknown" type
    validation.refuse_fractional_labels(y, binary=True)   # scikit-learn's "continuous"
    multiclass.check_classification_targets(y)
    y_type = multiclass.type_of_target(y, input_name="y", raise_unknown=True)
    if y_type != "binary":
      values = np.unique(y)
      semi = (values.size == 3 and values.dtype.kind in "iuf" and values[0] == validation.MARKER
              and values[1] >= 0)   # -1 beside two classes: scikit-learn's unlabeled marker
      if validation.svmlight_like(y):
        advice = (f" y holds -1 ({int(np.sum(y == -1))} rows), 0 ({int(np.sum(y == 0))}), 1: "
                  "fit ROCSVM on its labeled rows: y != -1 if -1 marks them unlabeled, y != 0 "
                  "for SVMlight's -1 / +1 classes (or QSGS2AUC(unlabeled_label=0)).")
      elif semi:
        advice = (f" If -1 marks unlabeled rows ({int(np.sum(y == -1))} here): ROCSVM is "
                  "supervised, fit it on the labeled rows (y != -1), or use QSGS2AUC, which "
                  "trains on the unlabeled rows too.")
      else:
        advice = (" ROCSVM ranks two classes; for more, fit one per class "
                  "(sklearn.multiclass.OneVsRestClassifier) or binarize y explicitly.")
      raise ValueError(f"Only binary classification is supported. The type of the target is "
                       f"{y_type}.{advice}")
    self.classes_ = np.unique(y)
    if self.classes_.size != 2:
      raise ValueError(f"ROCSVM needs both classes in y; received {self.classes_.size} class "
                       f"({self.classes_.tolist()}). Pass points of two classes.")
    positive = y == self.classes_[1]
    low, scale = preprocessing.fit_scaling(X, self.scale_inputs)
    X = preprocessing.minmax_apply(X, low, scale)
    seed = int(check_random_state(validation.seed_of(self.random_state)).randint(
        np.iinfo(np.int32).max))
    if self.kernel == "linear":
      sigma = None                       # the linear kernel has none (as SVC ignores gamma)
    elif isinstance(self.sigma, str):
      sigma = median_heuristic_sigma(np.random.default_rng(seed), X)
    else:
      sigma = float(self.sigma)
    num_landmarks = model_lib.check_counts(num_landmarks=self.num_landmarks)["num_landmarks"]
    if self.kernel == "nystrom" and num_landmarks > X.shape[0]:
      if validation.set_away_from_default(self.num_landmarks, _DEFAULT_LANDMARKS):   # the
        warnings.warn(f"num_landmarks={num_landmarks} > n_samples={X.shape[0]}; using "   # user's
                      f"{X.shape[0]} landmarks.", UserWarning,   # choice; the default is "at
                      stacklevel=validation.outside_stacklevel())   # most 300", no warning
      num_landmarks = X.shape[0]
    nystrom = dict(sigma=sigma, num_landmarks=num_landmarks, landmarks=self.landmarks)
    result = model_lib.fit(
        X, positive.astype(np.int32), kernel=self.kernel, lam=self.lam, loss=self.loss,
        num_pairs=self.num_pairs, optimizer=self.optimizer, learning_rate=self.learning_rate,
        max_steps=self.max_steps, tol=self.tol, key=seed,
        **(nystrom if self.kernel == "nystrom" else {}))
    self.input_min_, self.input_scale_, self.sigma_ = low, scale, sigma
    self.model_ = result.model
    self.n_iter_ = result.num_steps
    self.converged_ = result.converged
    self.objective_ = result.value
    if self.kernel == "linear":
      self.coef_ = np.asarray(result.model.coef, np.float64)
    with warnings.catch_warnings():   # training rows beyond the landmarks' reach score 0: the
      warnings.simplefilter("ignore", errors.UnscaledFeaturesWarning)   # threshold reads that
      scores = self._scores(X)
    if self.threshold == "accuracy":
      self.threshold_ = accuracy_threshold(scores, positive)
    else:
      self.threshold_ = -train_lib.intercept_for_rate(scores, positive, self.target_rate,
                                                      self.threshold)
    return self

  def _scores(self, x):
    """f(x') of scaled points [n, p] as float64 [n] (linear: on the host in float64)."""
    if self.kernel == "linear":   # a row's score ignores its batch
      return x @ self.coef_
    return model_lib.decision_function(self.model_, x, units=(self.input_min_, self.input_scale_)
                                       ).astype(np.float64)

  def decision_function(self, X):
    """Scores f(x') - threshold_ [n] (float64) of the scaled x'; higher means ``classes_[1]``."""
    skvalidation.check_is_fitted(self, "model_")
    validation.check_features(X)
    with np.errstate(over="ignore", invalid="ignore"):
      X = skvalidation.validate_data(self, X, reset=False, dtype=np.float64)
    x = preprocessing.minmax_apply(X, self.input_min_, self.input_scale_)
    return self._scores(x) - self.threshold_

  def predict(self, X):
    """``classes_[1]`` where ``decision_function(X) > 0``, else ``classes_[0]``."""
    skvalidation.check_is_fitted(self, "model_")
    return self.classes_[(self.decision_function(X) > 0).astype(int)]

  def score(self, X, y, sample_weight=None):
    """AUC of ``decision_function(X)`` against ``y == classes_[1]`` (ties count 1/2).

    Raises ``ValueError`` for labels not seen in fit (also of another type: ints against text
    classes) and for y of one class (or whose other class has weight 0): there is no AUC.
    """
    scores = self.decision_function(X)
    validation.refuse_unreadable("y", y)
    y = validation.unbox_numbers(np.asarray(y))   # ints held as objects: ints, as in fit
    known = _isin(y, self.classes_)
    if not known.all():
      unknown = validation.distinct_values(y[~known])
      raise ValueError(f"y holds labels {unknown[:5]} not seen in fit; the classes are "
                       f"{self.classes_.tolist()}.")
    positive = _isin(y, self.classes_[1:]).reshape(-1)
    sample_weight = validation.check_sample_weight(sample_weight, positive.size)
    counted = np.ones(positive.shape, bool) if sample_weight is None else sample_weight > 0
    if not counted.any():
      raise ValueError("sample_weight is 0 for every row: there is nothing to score.")
    if positive[counted].all() or not positive[counted].any():
      present = self.classes_[[int(positive[counted].any())]].tolist()
      weighted = "" if sample_weight is None else " with weight > 0"
      raise ValueError(f"the rows of y{weighted} all belong to one class ({present}): no pair "
                       "of the two classes, so there is no AUC. Score on rows of both classes.")
    return float(skmetrics.roc_auc_score(positive, scores, sample_weight=sample_weight))
