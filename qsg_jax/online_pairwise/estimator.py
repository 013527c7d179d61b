"""``OnlinePairwiseRanker``: a scikit-learn estimator over online pairwise least squares (Eq. 1).

``partial_fit`` feeds one chunk of the stream to ``fit_stream`` (continuing from the stored
state, so a stream fed chunk by chunk gives the iterate of one pass over it); ``fit`` starts
over. The model is linear, f(x) = w . x', a ranking score on the scaled inputs x' (below):
``decision_function`` returns it and ``score`` is the AUC of f on binary targets (larger target
= positive), in general the fraction of pairs with different targets that f orders like the
targets (ties count 1/2). Every input dtype (int, bool, float16, pandas nullable) is computed in
float64 on the host and float32 in the update. It is a ranker, neither a classifier nor a
regressor: there is no ``predict``, so scikit-learn's tools that need one
(``TransformedTargetRegressor``, ``cross_val_predict``, ``partial_dependence``) refuse it; score
with ``decision_function``.

Scaling, the rule of every estimator of the package (``QSGS2AUC``, ``ROCSVM``): with
``scale_inputs=True`` (default) each feature is min-max scaled, x' = (x - input_min_) /
input_scale_, by ``qsg_jax.data.minmax_fit`` on the training rows (``fit``: all of them;
``partial_fit``: the first chunk, kept for the rest of the stream), and the same map is applied
when scoring. Unscaled features slow Eq. (1) down by their condition number (AUC 0.64 against
0.97 on features in the thousands).
"""

import jax
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted
from sklearn.utils.validation import validate_data

from qsg_jax import _validation as validation
from qsg_jax import metrics
from qsg_jax.data import preprocessing
from qsg_jax.online_pairwise import streaming
from qsg_jax.online_pairwise import updates


__docformat__ = "numpy"

_TARGET_FIX = "every row needs a target: drop or impute those rows"
_BLOCK_ELEMENTS = 2**22   # pairs per block of the O(n^2) counts (about 70 MB of temporaries)


def _as_real_vector(name, values, fix):
  """``values`` as a float64 NumPy array after refusing sparse, non-numeric, non-finite values."""
  if type(values).__module__.startswith("scipy.sparse"):
    raise TypeError(f"{name} is a scipy sparse matrix; pass {name}.toarray().")
  validation.refuse_masked(name, values)
  arr = np.asarray(values)
  if arr.dtype != bool and (not np.issubdtype(arr.dtype, np.number) or np.iscomplexobj(arr)):
    raise TypeError(f"{name} must be real numbers; received dtype {arr.dtype}.")
  if arr.ndim != 1:
    raise ValueError(f"{name} must have shape [n]; received shape {arr.shape}. Flatten it "
                     "(reshape(-1)) or pass one column.")
  arr = arr.astype(np.float64)
  bad = ~np.isfinite(arr)
  if bad.any():
    raise ValueError(f"{name} has {int(bad.sum())} NaN or infinite values (first at row "
                     f"{int(np.argmax(bad))}); {fix}.")
  return arr


def _check_scored(scores_name, scores, targets_name, targets):
  """(scores, targets) as float64 [n] vectors of one length, finite."""
  scores = _as_real_vector(scores_name, scores, "a ranking needs a finite score per row (pass "
                           "scores without missing values; a diverged model's: use a larger mu)")
  targets = _as_real_vector(targets_name, targets, _TARGET_FIX)
  if scores.shape != targets.shape:
    raise ValueError(f"{scores_name} and {targets_name} must have the same length; received "
                     f"{scores.shape[0]} and {targets.shape[0]}.")
  return scores, targets


def _precheck_y(y):
  """Numeric targets as a NumPy array (None stays None) after short errors for sparse, complex,
  text or object targets, before scikit-learn's long ones (which print the whole array). An
  ordered pandas Categorical whose categories are text or not in sorted order gives its codes
  (the order it states); numeric categories in sorted order keep their values."""
  if y is None:
    return None   # validate_data: "requires y to be passed"
  if type(y).__module__.startswith("scipy.sparse"):
    raise TypeError("y is a scipy sparse matrix; pass the targets as a dense [n] array "
                    "(y.toarray().ravel()).")
  validation.refuse_masked("y", y)   # (sparse: above) its mask would be read through
  order = validation.stated_order(y)
  if order is not None and (any(isinstance(c, str) for c in order) or order != sorted(order)):
    rank = {c: float(i) for i, c in enumerate(order)}   # its order, not its values' (NaN: NA)
    return np.array([rank.get(v, np.nan) for v in np.ravel(np.asarray(y, object)).tolist()])
  raw = np.asarray(y)   # text ("1", "2") is not a number, before as_numbers would parse it
  text = raw.dtype.kind in "US" or (raw.dtype == object and any(
      isinstance(v, str) for v in raw.ravel().tolist()))
  arr = raw if text else validation.as_numbers(y, "y")   # pandas nullable numbers: pd.NA becomes NaN
  if arr.dtype.kind == "c":
    raise ValueError(f"Complex data not supported: y has dtype {arr.dtype}; the targets must be "
                     "real numbers (ranked by their order). Pass y.real or np.abs(y).")
  if arr.dtype.kind in "biuf":
    return arr
  try:   # objects holding numbers
    if text:
      raise TypeError
    return arr.astype(np.float64)
  except (TypeError, ValueError):
    first = next((v for v in np.ravel(arr).tolist() if not isinstance(v, (int, float))), None)
    raise TypeError(f"y must be real numbers (the targets' order is ranked); received dtype "
                    f"{arr.dtype} holding e.g. {str(first)[:20]!r}. State the order of ordered "
                    "classes: y = pd.Categorical(y, categories=order, ordered=True), order = the "
                    "labels from lowest to highest (its codes are ranked; np.unique would sort "
                    "text alphabetically).") from None


def pairwise_ranking_accuracy(scores, targets) -> float:
  """Fraction of pairs with different targets that ``scores`` order the same way (ties 1/2).

  Equal to the AUC for two target values (``metrics.binary_auc``, O(n log n)); otherwise an
  exact O(n^2)-time count in blocks of about 4 million pairs (memory bounded whatever n).

  Args:
    scores: [n] scores.
    targets: [n] real targets.

  Returns:
    Python float in [0, 1].

  Raises:
    ValueError: shapes other than [n] or different lengths, NaN / infinite scores or targets,
      fewer than two target values.
    TypeError: values that are not real numbers.

  Example:
    >>> pairwise_ranking_accuracy(np.array([0.1, 0.5, 0.9]), np.array([0, 1, 2]))
    1.0
  """
  scores, targets = _check_scored("scores", scores, "targets", targets)
  levels = np.unique(targets)
  if levels.size < 2:
    raise ValueError(f"every target is {levels.tolist()}: no pair to rank. Score on targets "
                     "with at least two values.")
  if levels.size == 2:
    return float(metrics.binary_auc(scores, (targets == levels[1]).astype(np.int32)))
  right = ties = pairs = 0.0
  rows = max(1, _BLOCK_ELEMENTS // scores.size)   # [rows, n] blocks: bounded memory at any n
  for start in range(0, scores.size, rows):
    dt = targets[start:start + rows, None] - targets[None, :]        # [b, n]
    ds = scores[start:start + rows, None] - scores[None, :]
    ordered = dt > 0
    pairs += ordered.sum()
    right += (ordered & (ds > 0)).sum()
    ties += (ordered & (ds == 0)).sum()
  return float((right + 0.5 * ties) / pairs)


def _check_mu_fits(mu, theta, seen, x):
  """``ValueError`` naming ``mu`` when the step sizes gamma_t = t^-theta / mu of the examples
  t = seen + 1 .. seen + len(x) (t >= 2: t = 1 makes no step) leave float32's normal range: the
  update computes in float32, which turns them into inf or flushes them to 0 (a model that never
  moves). The advice is the estimator's own: mu=None, or a mu near ``estimate_mu`` of ``x``."""
  mu, theta = float(mu), float(theta)
  first, last = max(seen + 1, 2), seen + x.shape[0]
  if last < first:
    return
  info = np.finfo(np.float32)
  largest, smallest = first ** -theta / mu, last ** -theta / mu   # float64: no overflow here
  if float(info.tiny) <= smallest and largest <= float(info.max):
    return
  try:
    estimate = f" ({updates.estimate_mu(x[:2048]):.3g} for these rows)"
  except ValueError:   # e.g. every row the same point
    estimate = ""
  fix = f"Leave mu=None (estimate_mu on the first chunk{estimate}) or pass a mu near it."
  if largest > float(info.max):
    raise ValueError(f"mu={mu:g} is too small: the step size t^-theta / mu is {largest:.3g} at "
                     f"t = {first}, beyond float32's range, in which the update computes. {fix}")
  raise ValueError(f"mu={mu:g} is too large: the step size t^-theta / mu falls to "
                   f"{smallest:.3g} by t = {last}, below float32's normal range, which the "
                   f"update flushes to 0: the model stops moving. {fix}")


class OnlinePairwiseRanker(BaseEstimator):
  """Online pairwise least squares (Boissier, Lyu, Ying, Zhou) as a scikit-learn estimator.

  A linear ranking score f(x) = w . x' on the scaled inputs x', trained by one pass of Eq. (1)
  over a stream of (x, y) with real targets y: ``partial_fit`` continues the stream chunk by
  chunk, ``fit`` starts over.

  Parameters
  ----------
  theta : float, default=0.75
      Exponent of the step size gamma_t = t^-theta / mu (Theorem 1: 1/2 < theta < 1).
  mu : float or None, default=None
      Scale of the step size; None estimates it on the first chunk (``estimate_mu``).
  chunk_size : int, default=256
      Examples per jitted scan; chunks of other lengths are split or padded, so ``partial_fit``
      compiles once whatever the chunk lengths.
  scale_inputs : bool, default=True
      Min-max scale each feature (module docstring); set False only for features already in
      [0, 1].

  Attributes
  ----------
  coef_ : ndarray of shape (n_features,)
      Weights w of f(x) = w . x' on the scaled inputs x'.
  input_min_, input_scale_ : ndarray of shape (n_features,)
      The min-max map x' = (x - input_min_) / input_scale_ (zeros and ones when
      ``scale_inputs=False``), fitted on the first chunk of the stream.
  scaled_inputs_ : bool
      ``scale_inputs`` at the first chunk: the stream's scaling, which cannot change mid-stream.
  state_ : IncrementalState
      The iterate (NumPy arrays) the next ``partial_fit`` continues from.
  step_size_ : PolynomialStepSize
      The step size in use (holds the estimated mu).
  n_features_in_ : int
      Number of features seen in the first chunk.
  feature_names_in_ : ndarray of shape (n_features_in_,)
      Column names of X, set only when X is a DataFrame with string column names.

  Notes
  -----
  ``set_params(theta=..., mu=...)`` between ``partial_fit`` calls takes effect on the next chunk
  (the stream continues with the new schedule; mu=None keeps the mu in use); changing
  ``scale_inputs`` mid-stream is refused (call ``fit`` to start over). ``score`` is the AUC of
  f on binary targets, in general ``pairwise_ranking_accuracy``.

  Examples
  --------
  >>> import numpy as np
  >>> from qsg_jax.online_pairwise import OnlinePairwiseRanker
  >>> rng = np.random.default_rng(0)
  >>> x = rng.normal(size=(512, 3)); y = x @ np.array([1.0, -2.0, 0.5])
  >>> ranker = OnlinePairwiseRanker()
  >>> for start in range(0, 512, 128):                   # a stream of 4 chunks
  ...   ranker = ranker.partial_fit(x[start:start + 128], y[start:start + 128])
  >>> ranker.coef_.shape
  (3,)
  >>> bool(ranker.score(x, y) > 0.9)                     # pairs ordered like the targets
  True
  """

  def __init__(self, theta=0.75, mu=None, chunk_size=256, scale_inputs=True):
    self.theta = theta
    self.mu = mu
    self.chunk_size = chunk_size
    self.scale_inputs = scale_inputs

  def partial_fit(self, X, y):
    """Continues the stream with the examples (X [c, d], y [c] real targets); returns self.

    A chunk whose targets all have one value is accepted (a stream sorted by time may hold
    such chunks): Eq. (1) pairs each example with every earlier one, so later chunks rank
    against it. ``coef_`` stays 0 until the stream has held two target values. ``fit``, which
    sees the whole data, refuses one-valued targets.
    """
    return self._continue(X, y)

  def _continue(self, X, y, whole=False):
    """``partial_fit``'s body (``fit`` calls it too, so warnings point at the caller of either);
    ``whole``: (X, y) is all the data (``fit``), so one-valued targets are refused."""
    self._check_params()
    validation.check_features(X, training=True)   # short errors before scikit-learn's
    y_arr = _precheck_y(y)
    if y_arr is not None and y_arr.ndim == 1:
      targets = _as_real_vector("y", y_arr, _TARGET_FIX)
      if y_arr.shape[0] != np.shape(X)[0]:
        raise ValueError(f"y has {y_arr.shape[0]} targets but X has {np.shape(X)[0]} rows; pass "
                         "one target per row of X.")
      levels = np.unique(targets)
      if whole and levels.size == 1 and targets.size > 1:   # Eq. (1): differences, so w = 0
        # (one row: the n_samples message below, which scikit-learn's checks look for)
        raise ValueError(f"every target is {levels.tolist()}: no pair to rank, so the model "
                         "would be w = 0 (every score tied). Fit on targets with at least two "
                         "values.")
    first = not hasattr(self, "state_")
    if first and self.mu is None and np.ndim(X) == 2 and np.shape(X)[0] < 2:
      raise ValueError(f"the first partial_fit chunk has n_samples = {np.shape(X)[0]}; it needs at "
                       "least 2 rows to estimate mu (the step size's scale, estimate_mu: the "
                       "features' spread). Pass a larger first chunk, or set mu.")
    if not first and bool(self.scale_inputs) != self.scaled_inputs_:
      raise ValueError(f"scale_inputs changed to {self.scale_inputs} since the first partial_fit;"
                       " the stream's scaling cannot change mid-stream. Call fit to start over.")
    with np.errstate(over="ignore", invalid="ignore"):   # its finite check sums huge values
      X, y = validate_data(self, X, y if y_arr is None else y_arr, reset=first, y_numeric=True,
                           dtype=np.float64,
                           ensure_min_samples=2 if first and self.mu is None else 1)
    if first:
      low, scale = preprocessing.fit_scaling(X, self.scale_inputs)
    else:   # set_params between chunks takes effect here
      low, scale = self.input_min_, self.input_scale_
      step_size = updates.polynomial_step_size(
          self.theta, self.step_size_.mu if self.mu is None else self.mu)
    x_scaled = preprocessing.minmax_apply(X, low, scale)
    if self.mu is not None:   # the user's mu: its steps must be float32 numbers (else fit_stream's
      _check_mu_fits(self.mu, self.theta, 0 if first else int(self.state_.step),   # advice
                     x_scaled)                                                      # is its own)
    schedule = {"theta": self.theta, "mu": self.mu} if first else {"step_size": step_size}
    result = streaming.fit_stream(
        [(x_scaled, y)], state=None if first else self.state_,
        chunk_size=self.chunk_size, **schedule)
    # Set only after the chunk trained: a failed call leaves the estimator as it was.
    self.scaled_inputs_, self.input_min_, self.input_scale_ = bool(self.scale_inputs), low, scale
    self.state_ = jax.tree.map(np.asarray, result.state)
    self.step_size_ = result.step_size
    self.coef_ = self.state_.w.astype(np.float64)
    return self

  def _check_params(self):
    """Raises for theta, mu that are not numbers, scale_inputs not a bool (before the data)."""
    updates.polynomial_step_size(self.theta, 1.0 if self.mu is None else self.mu)
    if not isinstance(self.scale_inputs, (bool, np.bool_)):
      raise TypeError(f"scale_inputs must be True or False; received {self.scale_inputs!r:.60}.")

  def fit(self, X, y):
    """Starts over and consumes (X, y) in order as one stream; returns self."""
    with validation.fitted_state_kept_on_error(self):   # a failed refit keeps the old model
      for name in [name for name in vars(self) if name.endswith("_")]:
        delattr(self, name)
      return self._continue(X, y, whole=True)

  def decision_function(self, X) -> np.ndarray:
    """Ranking scores f(x) = w . x' on the scaled inputs x': [n] float64."""
    check_is_fitted(self, "coef_")
    validation.check_features(X)
    with np.errstate(over="ignore", invalid="ignore"):
      X = validate_data(self, X, reset=False, dtype=np.float64)
    return preprocessing.minmax_apply(X, self.input_min_, self.input_scale_) @ self.coef_

  def score(self, X, y, sample_weight=None) -> float:
    """AUC of f on binary y (larger = positive); in general ``pairwise_ranking_accuracy``."""
    if sample_weight is not None:
      raise ValueError("sample_weight is not supported by the ranking score; pass None.")
    scores = self.decision_function(X)
    _, targets = _check_scored("decision_function(X)", scores, "y", _precheck_y(y))
    return pairwise_ranking_accuracy(scores, targets)

  def __sklearn_tags__(self):
    tags = super().__sklearn_tags__()
    tags.target_tags.required = True
    tags.input_tags.sparse = False
    return tags
