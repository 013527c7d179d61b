"""Scanning Eq. (1) over examples, and a checked driver that consumes a stream in chunks.

``run`` is the pure ``lax.scan`` of the update over one chunk (either form). ``fit_stream`` checks
each chunk at the API boundary, splits or pads it to a fixed length (a mask leaves the state
unchanged on padded rows) and runs one jitted scan per piece: a stream of any length compiles once,
and only one chunk is held in memory, so the data may be larger than memory.
"""

import itertools
import warnings
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax.online_pairwise import updates
from qsg_jax.errors import DivergenceError

_FORMS = ("incremental", "literal")
_MU_SAMPLE = 2048   # examples of the first chunk that mu=None is estimated on.
# A short piece is padded to chunk_size only while the padded block holds at most this many
# numbers; beyond, to the next power of two (a chunk_size of 10**9 padded every piece to 10**9
# rows: killed for memory, and the scan ran every padded step).
_PAD_NUMBERS = 2**24


def _padded_length(length, rows, dim):
  """Rows a piece of ``rows`` examples is padded to: ``length`` (one compiled shape) when small
  enough, else the next power of two (at most log2 shapes, under twice the rows)."""
  if rows == length or length * max(dim, 1) <= _PAD_NUMBERS:
    return length
  return min(length, 1 << (rows - 1).bit_length())


class StreamResult(NamedTuple):
  """What ``fit_stream`` returns."""
  state: Any             # final IncrementalState or LiteralState; state.w is w_{T+1}.
  step_size: Callable    # the schedule used (holds the estimated mu when mu was None).
  metrics: Any           # metrics_fn outputs per example, stacked to [T, ...] NumPy; or None.


def _update_fn(state):
  if isinstance(state, updates.IncrementalState):
    return updates.update
  if isinstance(state, updates.LiteralState):
    return updates.update_literal
  raise TypeError(f"state must be an IncrementalState (from init) or a LiteralState (from "
                  f"init_literal); received {type(state).__name__}.")


def run(state, xs, ys, step_size: Callable, valid=None, metrics_fn: Optional[Callable] = None):
  """Runs Eq. (1) over a chunk of examples with ``lax.scan`` (pure; jit it from outside).

  Args:
    state: ``IncrementalState`` or ``LiteralState``; its type picks the form.
    xs: [c, d] examples in stream order.
    ys: [c] labels.
    step_size: callable t -> gamma_t (static under jit: pass the same object every call).
    valid: optional [c] bool; rows where it is False are skipped, leaving the state unchanged
      (padding of a short chunk).
    metrics_fn: optional callable(state) -> pytree of arrays, recorded after every example.

  Returns:
    (state after the chunk, metrics stacked to [c, ...] or None).

  Example:
    >>> from qsg_jax.online_pairwise import init, polynomial_step_size
    >>> state, _ = run(init(2), jnp.eye(2), jnp.array([1.0, 0.0]), polynomial_step_size(0.75, 3.0))
    >>> int(state.step)
    2
  """
  update_fn = _update_fn(state)
  dim = state.w.shape[0]
  if jnp.ndim(xs) != 2 or jnp.shape(xs)[1] != dim:
    raise ValueError(f"xs must have shape [c, {dim}] (the state has d = {dim}); received shape "
                     f"{jnp.shape(xs)}.")
  c = jnp.shape(xs)[0]
  if jnp.shape(ys) != (c,):
    raise ValueError(f"ys must have shape [{c}] (one label per row of xs); received shape "
                     f"{jnp.shape(ys)}.")
  if valid is not None:
    valid = jnp.asarray(valid, bool)
    if valid.shape != (c,):
      raise ValueError(f"valid must have shape [{c}]; received shape {valid.shape}.")

  def body(carry, example):
    x_t, y_t, keep = example
    new = update_fn(carry, x_t, y_t, step_size)
    if keep is not None:   # a select over the state, only where rows may be padding
      new = jax.tree.map(lambda a, b: jnp.where(keep, a, b), new, carry)
    return new, (None if metrics_fn is None else metrics_fn(new))

  return jax.lax.scan(body, state, (xs, ys, valid))


def _run_recording_steps(state, xs, ys, step_size, valid, metrics_fn):
  """``run`` that also records gamma_t of every example, for the host to check after the chunk."""
  dtype = state.w.dtype

  def record(new):   # new.step = t, the index of the example just used
    return updates.step_size_at(step_size, new.step, dtype), (
        None if metrics_fn is None else metrics_fn(new))

  state, (gammas, metrics) = run(state, xs, ys, step_size, valid, record)
  return state, gammas, metrics


_run_chunk = jax.jit(_run_recording_steps, static_argnames=("step_size", "metrics_fn"))


def _check_step_sizes(index, gammas, first_t, step_size, dtype):
  """Raises unless the step sizes gamma_t used (t >= 2; t = 1 makes no step) are positive."""
  ts = first_t + np.arange(gammas.shape[0])
  bad = (ts >= 2) & ~(np.isfinite(gammas) & (gammas > 0))
  if bad.any():
    row = int(np.argmax(bad))
    t, gamma = int(ts[row]), float(gammas[row])
    if isinstance(step_size, updates.PolynomialStepSize):   # the schedule is right; mu is not
      raise ValueError(
          f"gamma_t = t^-theta / mu with mu = {step_size.mu:.3g} is {gamma:.3g} in "
          f"{np.dtype(dtype).name} at t = {t} (chunk {index}): mu is too far from the scale of "
          "unit features for this precision. Rescale the features (min-max to [0, 1]: "
          "OnlinePairwiseRanker(scale_inputs=True), qsg_jax.data.minmax_fit) or use "
          "dtype=float64.")
    raise ValueError(f"step_size gave gamma_t = {gamma:.3g} at iteration t = {t} (chunk {index});"
                     " a step size must be positive and finite at every t. Fix the schedule, or "
                     "use polynomial_step_size(theta, mu).")


def _check_chunk(index, x, y, dim, dtype):
  """Chunk ``index`` as NumPy arrays of ``dtype`` after checking shapes and finiteness."""
  for name, arr in (("x", x), ("y", y)):
    if type(arr).__module__.startswith("scipy.sparse"):
      raise TypeError(f"chunk {index}: {name} is a scipy sparse matrix; the O(d^2) update needs "
                      f"dense rows: yield {name}.toarray() chunk by chunk.")
  x, y = validation.as_numbers(x, f"chunk {index}: x"), validation.as_numbers(
      y, f"chunk {index}: y")   # bfloat16 read as float32
  if x.ndim != 2:
    raise ValueError(f"chunk {index}: x must have shape [c, d]; received shape {x.shape}. "
                     "Reshape a single example to [1, d].")
  if dim is not None and x.shape[1] != dim:
    raise ValueError(f"chunk {index}: x has {x.shape[1]} features but the stream has d = {dim}. "
                     "Every chunk must have the same columns.")
  if y.shape != (x.shape[0],):
    raise ValueError(f"chunk {index}: y must have shape [{x.shape[0]}] (one label per row of x); "
                     f"received shape {y.shape}.")
  for name, arr in (("x", x), ("y", y)):
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool) or np.iscomplexobj(arr):
      raise TypeError(f"chunk {index}: {name} must be real numbers; received dtype {arr.dtype}.")
  bad = ~np.isfinite(x).all(axis=1) | ~np.isfinite(y)
  if bad.any():
    raise ValueError(f"chunk {index} has {int(bad.sum())} examples with NaN or infinite values "
                     f"(first at row {int(np.argmax(bad))}). Drop or impute them before streaming.")
  # The update multiplies values pairwise (second moments x x^T, y x, w^T x over d terms): the
  # largest value times itself, d times, must stay within the state's float range. And the
  # running moments must resolve those products to the dtype's precision eps while XLA flushes
  # results below the smallest normal number tiny to zero: a feature column or the targets whose
  # largest |value| m has m^2 < tiny / eps (float32: m < 3.2e-16) lose their moments, and tiny
  # targets give w = 0 without a word (a zero model ranks at chance).
  info = np.finfo(dtype)
  limit = float(np.sqrt(info.max / (4.0 * max(x.shape[1], 1))))
  small = float(np.sqrt(info.tiny / info.eps))
  for name, arr in (("x", x), ("y", y)):
    if not arr.size:
      continue
    size = np.abs(arr.astype(np.float64))
    top = np.max(size, axis=0)   # x: per column
    rescale = ("Rescale y: a positive factor keeps the ranking (e.g. y / np.abs(y).max())"
               if name == "y" else "Rescale the features (min-max to [0, 1]: "
               "qsg_jax.data.minmax_fit; OnlinePairwiseRanker does it)")
    if np.any(top > limit):
      big = size > limit
      row = int(np.argmax(big.any(axis=1) if big.ndim == 2 else big))
      raise ValueError(
          f"chunk {index}: {name} has values up to |{name}| = {float(np.max(top)):.3g} (first at "
          f"row {row}): their products in the O(d^2) update (second moments) exceed the "
          f"{np.dtype(dtype).name} range {info.max:.3g}. {rescale}, or pass dtype=float64 to "
          "fit_stream.")
    low = (top > 0) & (top < small)
    if np.any(low):
      what = "y" if name == "y" else f"x column {int(np.argmax(low))}"
      raise ValueError(
          f"chunk {index}: {what} has values only up to {float(np.max(top[low])):.3g}, below "
          f"sqrt(tiny / eps) = {small:.2g} of {np.dtype(dtype).name}: the update's products "
          f"underflow to 0 (a zero model). {rescale}, or pass dtype=float64.")
  return x.astype(dtype), y.astype(dtype)


def _check_mu_range(step_size, dtype, x=None):
  """Raises, naming mu (and the features' scale when mu was estimated on ``x``), when mu or
  gamma_2 = 2^-theta / mu does not fit in ``dtype``."""
  info = np.finfo(dtype)
  with np.errstate(over="ignore", under="ignore"):
    gamma = np.asarray(2.0 ** -step_size.theta / step_size.mu, np.float64).astype(dtype)
  if step_size.mu <= float(info.max) and np.isfinite(gamma) and gamma > 0:
    return
  where = "mu" if x is None else (
      f"mu = estimate_mu(first chunk) (the squared spread of the features, which reach |x| = "
      f"{float(np.max(np.abs(x))):.3g})")
  raise ValueError(
      f"{where} = {step_size.mu:.3g} makes the step size 1 / mu {'0' if gamma == 0 else 'inf'} "
      f"in {np.dtype(dtype).name}. Rescale the features (min-max to [0, 1]: "
      "OnlinePairwiseRanker(scale_inputs=True), qsg_jax.data.minmax_fit), pass a mu on their "
      "scale, or use dtype=float64.")


def _iterate(chunks, num_chunks):
  if callable(chunks):
    if num_chunks is None:
      raise ValueError("chunks is a function of the chunk index: pass num_chunks too, e.g. "
                       "fit_stream(make_chunk, num_chunks=100).")
    return (chunks(i) for i in range(int(num_chunks)))
  if isinstance(chunks, (tuple, list)) and len(chunks) == 2 and all(
      hasattr(part, "shape") for part in chunks) and len(chunks[0].shape) == 2 and len(
          chunks[1].shape) == 1:
    raise TypeError(f"chunks is one (x, y) pair (x of shape {tuple(chunks[0].shape)}, y of shape "
                    f"{tuple(chunks[1].shape)}), not an iterable of pairs: pass [(x, y)].")
  try:
    iterator = iter(chunks)
  except TypeError:
    raise TypeError(f"chunks must be an iterable of (x, y) pairs or a function i -> (x, y); "
                    f"received {type(chunks).__name__}.") from None
  return iterator if num_chunks is None else itertools.islice(iterator, int(num_chunks))


def _initial_state(state, form, dim, capacity, dtype):
  if state is not None:
    kind = "literal" if isinstance(state, updates.LiteralState) else "incremental"
    _update_fn(state)  # type check
    if form is not None and form != kind:
      raise ValueError(f"form={form!r} but the given state is of the {kind} form; drop form or "
                       "pass a matching state.")
    return state
  form = form or "incremental"
  if form not in _FORMS:
    raise ValueError(f"form must be one of {_FORMS}; received {form!r}.")
  if form == "literal":
    if capacity is None:
      raise ValueError("the literal form stores every example: pass capacity >= the stream "
                       "length, or use form='incremental' (O(d^2) memory).")
    return updates.init_literal(dim, capacity, dtype)
  return updates.init(dim, dtype)


def fit_stream(chunks, *, num_chunks=None, state=None, step_size: Optional[Callable] = None,
               theta=None, mu=None, form=None, capacity=None, chunk_size=None,
               metrics_fn: Optional[Callable] = None, dtype=None) -> StreamResult:
  """Runs Eq. (1) over a stream of (x, y) chunks, one jitted scan per chunk, no retracing.

  Args:
    chunks: iterable of (x [c_i, d], y [c_i]) pairs (e.g. a generator reading a file piece by
      piece), or a function i -> (x, y) of the chunk index (then ``num_chunks`` is required).
    num_chunks: how many chunks to take; None: until the iterable ends.
    state: state to continue from (its type decides the form, its dtype the precision); None:
      start from w_1 = w_2 = 0.
    step_size: callable t -> gamma_t (optax schedules work); None: t^-theta / mu. A step_size
      fixes its own scale: theta and mu are then refused (they would be ignored).
    theta: exponent of the default schedule (Theorem 1: 1/2 < theta < 1); None: 0.75.
    mu: scale of the default schedule; None: ``estimate_mu`` on the first chunk (at most its
      first 2048 examples). Continuing from a ``state`` needs the schedule it was trained with:
      pass ``step_size`` (the earlier ``StreamResult.step_size``) or ``mu``; both None is refused
      (a new estimate on the next chunk would silently change the schedule mid-stream).
    form: "incremental" (O(d^2) per step, the default) or "literal" (O(t d), needs capacity).
    capacity: examples the literal form can store (at least the stream length); refused with
      the incremental form and with a ``state`` (which has its own).
    chunk_size: examples per jitted scan; default the first chunk's length. Longer chunks are
      split and shorter ones padded, so no chunk length causes a recompilation (a huge
      chunk_size, whose padded block would pass 2**24 numbers, pads to the next power of two
      instead: at most log2 compilations).
    metrics_fn: optional callable(state) -> pytree of arrays recorded after every example; jit
      caches on its identity, so pass the same function object to reuse the compilation.
    dtype: float32 (None, the default) or float64 (needs ``jax_enable_x64``) for a new state;
      with a ``state``, only its own dtype is accepted.

  Returns:
    ``StreamResult`` (final state, the schedule used, stacked metrics).

  Raises:
    ValueError, TypeError: bad chunks or arguments (the message names the chunk and the fix);
      an argument that would have no effect (mu / theta with step_size, capacity without a new
      literal state, a dtype other than the state's); a step size gamma_t <= 0 or non-finite at
      an iteration t it was used (checked per chunk); values whose products overflow or
      underflow the state's dtype.
    DivergenceError: the iterate became non-finite (step size too large for the data).
  """
  if step_size is not None and not callable(step_size):
    raise TypeError(f"step_size must be a callable t -> gamma_t; received "
                    f"{type(step_size).__name__}. Use polynomial_step_size(theta, mu).")
  if step_size is not None and (mu is not None or theta is not None):
    name, value = ("mu", mu) if mu is not None else ("theta", theta)
    raise ValueError(f"{name}={value!r:.20} would be ignored: step_size={step_size!r:.60} sets "
                     "its own schedule (theta and mu shape the default t^-theta / mu only). "
                     f"Drop {name}, or pass step_size=polynomial_step_size(theta, mu).")
  if metrics_fn is not None and not callable(metrics_fn):
    raise TypeError(f"metrics_fn must be a callable state -> pytree of arrays, or None; received "
                    f"{type(metrics_fn).__name__}.")
  theta = 0.75 if theta is None else theta
  if step_size is None and mu is None:
    updates.polynomial_step_size(theta, 1.0)   # checks theta before any chunk is read
  chunk_size = validation.check_count("chunk_size", chunk_size, allow_none=True)
  num_chunks = validation.check_count("num_chunks", num_chunks, minimum=0, allow_none=True)
  if form is not None and form not in _FORMS:
    raise ValueError(f"form must be one of {_FORMS}; received {form!r:.40}.")
  capacity = validation.check_count("capacity", capacity, allow_none=True)
  if capacity is not None and state is not None:
    raise ValueError(f"capacity={capacity} would be ignored: a given state keeps its own "
                     "buffer. Drop capacity (or start a new stream, state=None, form='literal').")
  if capacity is not None and state is None and form != "literal":
    raise ValueError(f"capacity={capacity} applies to form='literal' only (the incremental form "
                     "stores no examples); drop capacity or pass form='literal'.")
  if step_size is None and mu is not None:
    step_size = updates.polynomial_step_size(theta, mu)
  dim = seen = None
  if state is None:
    dtype = updates.check_float_dtype(jnp.float32 if dtype is None else dtype)
  else:
    if step_size is None:
      raise ValueError("fit_stream continues from a state but was given no schedule: pass "
                       "step_size=<the StreamResult.step_size it was trained with> (or mu=...); "
                       "mu=None would estimate a new mu on this chunk and change the schedule "
                       "mid-stream.")
    state = _initial_state(state, form, None, None, None)
    if dtype is not None and updates.check_float_dtype(dtype) != state.w.dtype:
      raise ValueError(f"dtype={jnp.dtype(dtype).name} would be ignored: the given state is "
                       f"{state.w.dtype.name} and keeps it for the whole stream. Drop dtype, or "
                       "start a new stream (state=None) in that dtype.")
    dim, dtype, seen = int(state.w.shape[0]), state.w.dtype, int(state.step)
  if isinstance(step_size, updates.PolynomialStepSize):
    _check_mu_range(step_size, dtype)
  length = None if chunk_size is None else int(chunk_size)
  pieces = []
  taken = 0
  for index, chunk in enumerate(_iterate(chunks, num_chunks)):
    if not isinstance(chunk, (tuple, list)) or len(chunk) != 2:
      raise TypeError(f"chunk {index} must be a pair (x [c, d], y [c]); received "
                      f"{type(chunk).__name__}{'' if not hasattr(chunk, 'shape') else ' of shape '}"
                      f"{getattr(chunk, 'shape', '')}. Yield (x, y) tuples.")
    taken = index + 1
    x, y = _check_chunk(index, chunk[0], chunk[1], dim, dtype)
    if x.shape[0] == 0:
      continue
    if state is None:
      dim = x.shape[1]
      state = _initial_state(None, form, dim, capacity, dtype)
      seen = 0
    if step_size is None:
      if x.shape[0] < 2:
        raise ValueError("mu=None estimates mu from the first chunk, which needs >= 2 examples; "
                         "pass mu (or step_size), or a larger first chunk.")
      step_size = updates.polynomial_step_size(theta, updates.estimate_mu(x[:_MU_SAMPLE]))
      _check_mu_range(step_size, dtype, x)
    length = length or x.shape[0]
    if isinstance(state, updates.LiteralState) and seen + x.shape[0] > state.x_seen.shape[0]:
      raise ValueError(f"chunk {index} takes the literal form past its capacity of "
                       f"{state.x_seen.shape[0]} examples ({seen} seen, {x.shape[0]} more). "
                       "Pass a larger capacity or use form='incremental'.")
    for start in range(0, x.shape[0], length):
      n = min(length, x.shape[0] - start)
      width = _padded_length(length, n, x.shape[1])
      xs = np.pad(x[start:start + n], ((0, width - n), (0, 0)))
      ys = np.pad(y[start:start + n], (0, width - n))
      valid = np.arange(width) < n
      state, gammas, metrics = _run_chunk(state, xs, ys, step_size, valid, metrics_fn)
      _check_step_sizes(index, np.asarray(gammas[:n]), seen + 1, step_size, dtype)
      if not np.isfinite(np.asarray(state.w)).all():
        raise DivergenceError(
            f"the iterate became non-finite within examples {seen + 1}..{seen + n} (chunk "
            f"{index}) with step size gamma_t = {float(step_size(seen + 1)):.3g} at t = "
            f"{seen + 1}. Theorem 1 needs gamma_t (lambda_rho + kappa^2) <= 1: use a larger mu "
            f"(at least estimate_mu(x) = {updates.estimate_mu(x[:_MU_SAMPLE]):.3g} on this chunk) "
            "or a smaller step_size.")
      seen += n
      if metrics_fn is not None:
        pieces.append(jax.tree.map(lambda a, n=n: np.asarray(a[:n]), metrics))
  if state is None:
    raise ValueError("the stream was empty: no chunk had any example.")
  stacked = None
  if pieces:
    stacked = jax.tree.map(lambda *parts: np.concatenate(parts), *pieces)
  if num_chunks is not None and taken < num_chunks:
    warnings.warn(f"num_chunks={num_chunks} but the stream ended after {taken} chunks; trained on "
                  "those.", UserWarning, stacklevel=validation.outside_stacklevel())
  return StreamResult(state, step_size, stacked)
