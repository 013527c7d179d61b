"""scikit-learn style estimators around ``qsg_jax.fit``.

Semi-supervised data follow scikit-learn's convention (``sklearn.semi_supervised``): one array of
points and one of labels, where ``unlabeled_label`` (default -1) marks the unlabeled points.

    model = QS3ORAO(num_steps=256).fit(x, y)      # y: ordered classes, -1 = unlabeled
    model.predict(x_new), model.decision_function(x_new), model.score(x_test, y_test)

Classes may be any sortable labels; their sorted order is the ordinal order (``classes_``).
"""

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.base import ClassifierMixin

from qsg_jax import defaults
from qsg_jax import metrics
from qsg_jax import training


class QS3ORAO(ClassifierMixin, BaseEstimator):
  """Semi-supervised ordinal regression by AUC optimization (QS3ORAO); k = 2 is QSG-S2AUC.

  Hyper-parameters are those of ``qsg_jax.fit`` (see its docstring). ``score`` returns the mean
  AUC over the k-1 ordinal splits (Eq. 2), the papers' metric, rather than accuracy.
  """

  def __init__(self, sigma=defaults.SIGMA, lam=defaults.LAM, gamma=defaults.GAMMA,
               step_size=defaults.STEP_SIZE, num_steps=defaults.NUM_STEPS,
               num_frequencies=defaults.NUM_FREQUENCIES,
               unlabeled_batch_size=defaults.UNLABELED_BATCH_SIZE,
               labeled_batch_size=defaults.LABELED_BATCH_SIZE, loss=defaults.LOSS,
               random_state=0, unlabeled_label=-1):
    self.sigma = sigma
    self.lam = lam
    self.gamma = gamma
    self.step_size = step_size
    self.num_steps = num_steps
    self.num_frequencies = num_frequencies
    self.unlabeled_batch_size = unlabeled_batch_size
    self.labeled_batch_size = labeled_batch_size
    self.loss = loss
    self.random_state = random_state
    self.unlabeled_label = unlabeled_label

  def fit(self, x, y):
    """Trains on labeled rows (y != unlabeled_label) and unlabeled rows (y == unlabeled_label)."""
    x = np.asarray(x)
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != x.shape[0]:
      raise ValueError(f"y must have shape [{x.shape[0]}] (one label per row of x); received "
                       f"shape {y.shape}.")
    unlabeled = y == self.unlabeled_label
    self.classes_, codes = np.unique(y[~unlabeled], return_inverse=True)
    if self.classes_.size < 2:
      raise ValueError(f"need labeled points of at least 2 classes; found {self.classes_.tolist()}"
                       f" (unlabeled points are marked {self.unlabeled_label!r}).")
    self.result_ = training.fit(
        x[~unlabeled], codes, x[unlabeled] if unlabeled.any() else None, key=self.random_state,
        num_classes=self.classes_.size, sigma=self.sigma, lam=self.lam, gamma=self.gamma,
        step_size=self.step_size, num_steps=self.num_steps, num_frequencies=self.num_frequencies,
        unlabeled_batch_size=self.unlabeled_batch_size,
        labeled_batch_size=self.labeled_batch_size, loss=self.loss)
    self.n_features_in_ = x.shape[1]
    return self

  def decision_function(self, x):
    """Ranking scores f(x): [n]."""
    return training.decision_function(self.result_, x)

  def predict(self, x):
    """Predicted classes (from ``classes_``) by the fitted thresholds."""
    return self.classes_[training.predict(self.result_, x)]

  def score(self, x, y, sample_weight=None):
    """Mean AUC over the k-1 ordinal splits of f on (x, y); binary AUC when k = 2."""
    if sample_weight is not None:
      raise ValueError("sample_weight is not supported by the AUC score; pass None.")
    codes = np.searchsorted(self.classes_, np.asarray(y))
    if np.any(self.classes_[np.minimum(codes, self.classes_.size - 1)] != np.asarray(y)):
      raise ValueError(f"y contains labels outside the fitted classes {self.classes_.tolist()}.")
    return float(metrics.ordinal_auc(self.decision_function(x), codes, self.classes_.size))


class QSGS2AUC(QS3ORAO):
  """Semi-supervised binary AUC maximization (QSG-S2AUC): ``QS3ORAO`` restricted to 2 classes."""

  def fit(self, x, y):
    labels = np.unique(np.asarray(y)[np.asarray(y) != self.unlabeled_label])
    if labels.size != 2:
      raise ValueError(f"QSGS2AUC needs exactly 2 labeled classes; found {labels.tolist()}. "
                       "Use QS3ORAO for k ordered classes.")
    return super().fit(x, y)
