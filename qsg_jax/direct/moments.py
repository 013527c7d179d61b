"""Group moments of the features in one bounded-memory pass: the direct solver's statistics.

For groups G (the labeled classes, the unlabeled set) the squared-loss objective depends on the
data only through n_G, the means mu_G = mean_{x in G} (psi(x) - c) and the second moments
S_G = mean_{x in G} (psi(x) - c)(psi(x) - c)^T of the features shifted by a vector c
(``system.py``; everything enters through differences psi_a - psi_b, so c cancels). The shift
(the labeled points' mean feature) keeps float32 products free of cancellation: unshifted,
smooth kernels give features whose mean dwarfs their spread.

Accumulation (pure functions around an explicit state, as optax's ``init`` / ``update``):

    sums = init_sums(num_groups, p)                         # zeros
    sums = add_chunk(sums, feature_map, shift, x, groups)   # one chunk of C rows, jitted
    moments = finalize(sums, shift)                         # float64 NumPy ``Moments``

A chunk's products run in float32 at HIGHEST precision and are added to the running sums with
a compensated (two-sum) addition, so the sums carry about twice float32's precision on any
device, x64 or not; ``finalize`` adds the two parts in float64. A Nystrom map of rank r < p has
zero features past its first r columns, which use only r of its landmarks (``live_map``): the
passes compute only the first r' features (r rounded up to ``RANK_STEP``) from r' landmarks
(the papers' sigma = 0.1 on cod-rna: 64 of 512, so 1/8 of the kernel's, 1/64 of the
projection's and of the second moment's flops) and ``padded`` restores the p-feature moments,
whose entries there are exactly 0. Every chunk has the same shape (the last one padded, padding
rows marked by group -1), so one compilation serves any number of points (one per multiple of
``RANK_STEP``). On a mesh each device keeps its own sums of its
rows ([D, ...] arrays split over the axis) and ``finalize`` adds them with one ``psum``; several
processes do the same through ``distributed.load_unlabeled``'s strata
(``sharded_unlabeled_moments``).
"""

import functools
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax import numerics
from qsg_jax.direct import feature_maps
from qsg_jax.engine import sampling
from qsg_jax.numerics import HIGHEST

_P = jax.sharding.PartitionSpec
# Rows per chunk (per device on a mesh): [C, p] features and one [p, C] x [C, p] product.
CHUNK_ROWS = 4096
# From this many features on, a chunk's second moment skips its lower-left block (``_outer``).
SYMMETRIC_MIN = 128


class Moments(NamedTuple):
  """Shifted feature moments of G groups (float64 NumPy; the solver's only view of the data)."""
  counts: np.ndarray   # [G] points per group.
  means: np.ndarray    # [G, p] mean of psi(x) - shift (0 for an empty group).
  second: np.ndarray   # [G, p, p] mean of (psi(x) - shift)(psi(x) - shift)^T.
  shift: np.ndarray    # [p] the shift c.


class Sums(NamedTuple):
  """Running sums of one pass: float32 pairs (hi + lo), with a leading device axis on a mesh."""
  count: jax.Array     # [G] int32 points per group.
  first: jax.Array     # [G, p] sum of psi - c (hi part).
  first_lo: jax.Array  # [G, p] its compensation (lo part).
  outer: jax.Array     # [G, p, p] sum of (psi - c)(psi - c)^T (hi part).
  outer_lo: jax.Array  # [G, p, p] its compensation.


def init_sums(num_groups: int, num_features: int, num_devices: Optional[int] = None) -> Sums:
  """Zero ``Sums`` of G groups and p features (with a leading [D] axis when ``num_devices``)."""
  lead = () if num_devices is None else (num_devices,)
  g, p = num_groups, num_features
  zeros = lambda *shape: np.zeros(lead + shape, np.float32)   # jnp.zeros compiles per shape
  return jax.device_put(Sums(np.zeros(lead + (g,), np.int32), zeros(g, p), zeros(g, p),
                             zeros(g, p, p), zeros(g, p, p)))


def _two_sum(hi, lo, x):
  """(hi + lo) + x as a new (hi, lo) pair: Knuth's two-sum keeps the rounding error of hi + x."""
  s = hi + x
  back = s - hi
  return s, lo + ((hi - (s - back)) + (x - back))


def chunk_sums(feature_map, shift, x, groups, num_groups):
  """(count [G], first [G, p], outer [G, p, p]) of one chunk; rows of group -1 count nowhere.

  Args:
    feature_map: ``FourierMap`` or ``NystromMap``.
    shift: [p] float32 shift c.
    x: [C, d] float32 points.
    groups: [C] int32 group of each row in 0..G-1, or -1 (padding).
    num_groups: G (static).
  """
  psi = feature_maps.features(feature_map, x) - shift[None, :]                  # [C, p]
  member = groups[:, None] == jnp.arange(num_groups, dtype=groups.dtype)[None, :]   # [C, G]
  psi = jnp.where((groups >= 0)[:, None], psi, 0.0)      # padding rows may be anything (NaN)
  weights = member.astype(jnp.float32)
  first = jnp.matmul(weights.T, psi, precision=HIGHEST)                         # [G, p]
  weighted = weights[:, :, None] * psi[:, None, :]                              # [C, G, p]
  return jnp.sum(member, axis=0, dtype=jnp.int32), first, _outer(weighted, psi)


def _outer(weighted, psi):
  """[G, p, p] sum_rows weighted[:, g] psi^T: one product, or above ``SYMMETRIC_MIN`` features
  three of the four half blocks (the lower-left one is the upper-right's transpose), 3/4 of the
  flops (a 4096 x 512 chunk: 6 ms instead of 9.5)."""
  rows, g, p = weighted.shape
  product = lambda a, b: jnp.matmul(a.reshape(rows, -1).T, b, precision=HIGHEST).reshape(
      g, -1, b.shape[1])
  if p < SYMMETRIC_MIN:
    return product(weighted, psi)
  h = p // 2
  upper = product(weighted[:, :, :h], psi)                                      # [G, h, p]
  lower = product(weighted[:, :, h:], psi[:, h:])                               # [G, p - h, p - h]
  return jnp.concatenate(
      [upper, jnp.concatenate([jnp.swapaxes(upper[:, :, h:], 1, 2), lower], axis=2)], axis=1)


def add_sums(sums: Sums, count, first, outer) -> Sums:
  """``sums`` plus one chunk's sums, compensated."""
  first_hi, first_lo = _two_sum(sums.first, sums.first_lo, first)
  outer_hi, outer_lo = _two_sum(sums.outer, sums.outer_lo, outer)
  return Sums(sums.count + count, first_hi, first_lo, outer_hi, outer_lo)


@jax.jit
def add_chunk(sums: Sums, feature_map, shift, x, groups) -> Sums:
  """``sums`` updated with a chunk x [C, d] whose rows belong to ``groups`` [C] (-1: padding)."""
  return add_sums(sums, *chunk_sums(feature_map, shift, x, groups, sums.count.shape[-1]))


@functools.lru_cache(maxsize=None)
def _sharded_add(mesh, axis_name):
  """``add_chunk`` on a mesh: each device adds its rows of the chunk to its own sums."""
  split = _P(axis_name)

  def local(sums, feature_map, shift, x, groups):
    sums = jax.tree.map(lambda a: a[0], sums)
    sums = add_sums(sums, *chunk_sums(feature_map, shift, x, groups, sums.count.shape[-1]))
    return jax.tree.map(lambda a: a[None], sums)

  return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=(split, _P(), _P(), split, split),
                               out_specs=split))


@functools.lru_cache(maxsize=None)
def _device_total(mesh, axis_name):
  """[D, ...] per-device sums -> replicated totals: the pass's one psum (hi and lo parts)."""
  def local(sums):
    return jax.tree.map(lambda a: jax.lax.psum(a[0], axis_name), sums)
  return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=_P(axis_name), out_specs=_P()))


def host_value(array):
  """A replicated (or single-device) array's value on this host, also across processes."""
  if isinstance(array, jax.Array) and not array.is_fully_addressable:
    array = array.addressable_data(0)
  return np.asarray(array)


def finalize(sums: Sums, shift, mesh=None, axis_name: str = "data") -> Moments:
  """``Moments`` (float64 NumPy) of running sums of psi - shift; on a mesh the device sums are
  added first (one psum)."""
  if mesh is not None:
    sums = _device_total(mesh, axis_name)(sums)
  count = host_value(sums.count).astype(np.float64)
  first = host_value(sums.first).astype(np.float64) + host_value(sums.first_lo)
  outer = host_value(sums.outer).astype(np.float64) + host_value(sums.outer_lo)
  outer = 0.5 * (outer + np.swapaxes(outer, 1, 2))    # exactly symmetric
  return from_sums(count, first, outer, np.asarray(shift, np.float32).astype(np.float64))


def from_sums(counts, first, outer, shift) -> Moments:
  """``Moments`` of float64 group sums (counts [G], first [G, p], outer [G, p, p]): the means
  (0 for an empty group)."""
  scale = 1.0 / np.maximum(counts, 1.0)
  return Moments(counts, first * scale[:, None], outer * scale[:, None, None], shift)


def _chunks(source, dim, rows, name):
  """Yields (x [rows, d] float32, valid count) from an array-like or an iterator of chunks.

  Array-likes (NumPy arrays, ``np.load(mmap_mode="r")`` memory maps, h5py datasets) are read
  ``rows`` rows at a time; an iterator's chunks (any sizes) are re-cut into buffers of ``rows``.
  Only one buffer is held, so memory does not grow with the number of points.
  """
  buffer = np.zeros((rows, dim), np.float32)
  if hasattr(source, "shape") and hasattr(source, "__getitem__"):
    if len(source.shape) != 2 or source.shape[1] != dim:
      raise ValueError(f"{name} must be [n, {dim}]; received shape {tuple(source.shape)}.")
    pieces = (source[lo:lo + rows] for lo in range(0, source.shape[0], rows))
  else:
    try:
      pieces = iter(source)
    except TypeError:
      raise TypeError(f"{name} must be an array [n, d], a memory map or an iterable of [n_i, d] "
                      f"chunks; received {type(source).__name__}.") from None
  filled, seen = 0, 0
  # A fresh buffer per chunk: the device may alias a host buffer (CPU) while its computation,
  # dispatched asynchronously, has not run yet, so a filled buffer is never written again.
  for piece in pieces:
    piece = validation.check_chunk(name, piece, dim, seen, kernel=True)  # dtype, NaN, range, norms
    seen += piece.shape[0]
    while piece.shape[0]:
      take = min(rows - filled, piece.shape[0])
      buffer[filled:filled + take] = piece[:take]
      filled, piece = filled + take, piece[take:]
      if filled == rows:
        yield buffer, rows
        buffer, filled = np.zeros((rows, dim), np.float32), 0
  if filled:
    yield buffer, filled


def group_moments(feature_map, source, shift, *, groups=None, num_groups: int = 1,
                  chunk_rows: int = CHUNK_ROWS, mesh=None, axis_name: str = "data",
                  name: str = "x") -> Moments:
  """``Moments`` of the points of ``source`` in one pass of fixed-size chunks.

  Args:
    feature_map: ``FourierMap`` or ``NystromMap``.
    source: [n, d] array, memory map or other array-like with row slicing, or an iterable of
      [n_i, d] chunks (read once).
    shift: [p] shift c (``feature_shift``).
    groups: [n] int group ids 0..G-1 of the points (array-like sources only); None: all in 0.
    num_groups: G.
    chunk_rows: rows per chunk (per device on a mesh): one compilation per value.
    mesh: optional ``jax.sharding.Mesh``: each chunk's rows are split over ``axis_name``.
    axis_name: the mesh axis.
    name: what the caller calls ``source`` (messages).

  Returns:
    ``Moments`` with G groups.
  """
  dim = feature_maps.input_dim(feature_map)
  p = feature_maps.num_features(feature_map)
  full_shift, feature_map = shift, live_map(feature_map)   # zero columns skipped
  live = feature_maps.num_features(feature_map)
  num_groups = validation.check_count("num_groups", num_groups)
  devices = 1 if mesh is None else int(mesh.shape[axis_name])
  rows = validation.check_count("chunk_rows", chunk_rows) * devices
  shift = jnp.asarray(shift, jnp.float32)
  if shift.shape != (p,):
    raise ValueError(f"shift must have shape [{p}] (one per feature, feature_shift); received "
                     f"{shift.shape}.")
  shift = shift[:live]
  ids = None if groups is None else _checked_groups(groups, num_groups, source)
  if mesh is None:
    sums, add = init_sums(num_groups, live), add_chunk
  else:
    sums, add = init_sums(num_groups, live, devices), _sharded_add(mesh, axis_name)
    split = jax.sharding.NamedSharding(mesh, _P(axis_name))
    sums = jax.device_put(sums, split)
  start = 0
  for x, valid in _chunks(source, dim, rows, name):
    if ids is not None and start + valid > ids.shape[0]:
      raise ValueError(f"groups has {ids.shape[0]} entries but {name} has more rows; pass one "
                       "group per point.")
    chunk_groups = np.full(rows, -1, np.int32)
    chunk_groups[:valid] = 0 if ids is None else ids[start:start + valid]
    start += valid
    if mesh is None:
      sums = add(sums, feature_map, shift, jax.device_put(x), jax.device_put(chunk_groups))
    else:
      sums = add(sums, feature_map, shift, jax.device_put(x, split),
                 jax.device_put(chunk_groups, split))
  if ids is not None and start != ids.shape[0]:
    raise ValueError(f"groups has {ids.shape[0]} entries but {name} has {start} rows; pass one "
                     "group per point.")
  return padded(finalize(sums, shift, mesh, axis_name), full_shift)


# ``live_map`` rounds a Nystrom map's rank up to a multiple of this many features (shapes, hence
# compilations, come in steps of it).
RANK_STEP = 64


def live_map(feature_map):
  """The map without the feature columns that are zero for every x, and without the landmarks
  those features do not use: a Nystrom map's P keeps its r landmarks' directions in its first r
  columns (``feature_maps.nystrom_map``), so psi(x)[r:] = 0 exactly, and only r rows of P (its
  pivots) are nonzero there. The result's features are the first r' = min(p, r rounded up to
  ``RANK_STEP``) of the map's (r: the last nonzero column of P, whatever made it; ``padded``
  restores the p-feature moments), on the landmarks with a nonzero row there (their count rounded
  up the same way; the added ones have zero rows): the same features, with r' instead of p
  kernel columns per point. A Fourier map is returned as it is. Host-side: reads P."""
  if not isinstance(feature_map, feature_maps.NystromMap):
    return feature_map
  projection = host_value(feature_map.projection)
  landmarks, p = projection.shape
  nonzero = projection != 0
  used = np.flatnonzero(np.any(nonzero, axis=0))
  rank = int(used[-1]) + 1 if used.size else 0
  live = min(p, max(RANK_STEP, -(-rank // RANK_STEP) * RANK_STEP))
  rows = np.flatnonzero(np.any(nonzero[:, :live], axis=1))
  size = min(landmarks, max(live, -(-rows.size // RANK_STEP) * RANK_STEP))
  if live == p and size == landmarks:
    return feature_map
  keep = np.sort(np.concatenate([rows, np.setdiff1d(np.arange(landmarks), rows)[
      :size - rows.size]]))
  return feature_maps.NystromMap(jnp.asarray(host_value(feature_map.landmarks)[keep]),
                                 jnp.asarray(projection[keep, :live]), feature_map.sigma)


def padded(moments: Moments, shift) -> Moments:
  """``moments`` of a ``live_map`` (its first p' features) as the moments of all p
  features of the full map with shift ``shift`` [p]: the features past p' are 0 for every x
  (and so is their shift, the mean of such features), so their moments are 0."""
  shift = np.asarray(shift, np.float32).astype(np.float64)
  p, live = shift.shape[0], moments.shift.shape[0]
  if live == p:
    return moments
  g = moments.counts.shape[0]
  means, second = np.zeros((g, p)), np.zeros((g, p, p))
  means[:, :live], second[:, :live, :live] = moments.means, moments.second
  return Moments(moments.counts, means, second, shift)


def _checked_groups(groups, num_groups, source):
  """[n] int32 group ids after checking they are whole numbers in 0..G-1 (one per row of an
  array-like ``source``; an iterator's rows are counted during the pass)."""
  ids = validation.whole_labels(groups, "groups", f"integers 0..{num_groups - 1}")
  if ids.ndim != 1 or (hasattr(source, "shape") and ids.shape[0] != source.shape[0]):
    rows = source.shape[0] if hasattr(source, "shape") else "n"
    raise ValueError(f"groups must have shape [{rows}] (one group per point); received shape "
                     f"{ids.shape}.")
  outside = (ids < 0) | (ids >= num_groups)
  if outside.any():
    row = int(np.argmax(outside))
    raise ValueError(f"groups must lie in 0..{num_groups - 1} (num_groups={num_groups}); received "
                     f"{ids[row]} at row {row}.")
  return ids.astype(np.int32)


def labeled_moments(feature_map, x_labeled, y_labeled, num_classes: int, shift,
                    chunk_rows: int = CHUNK_ROWS) -> Moments:
  """Per-class ``Moments`` of the labeled points (G = k).

  Up to ``chunk_rows`` points: their float32 features (``point_features``: padded power-of-two
  buckets, so a new labeled-set size reuses a compilation) summed per class in float64 on the
  host (``class_sums``): one [n_c, p] product per class instead of the device pass's k products
  of the whole chunk (500 sgemm labels in 5 classes: 15 ms of a 0.1 s fit before). More points
  are summed class by class by ``group_moments`` (G = 1 each, the unlabeled pass's compilation).
  """
  if len(x_labeled) > chunk_rows:
    y = np.asarray(y_labeled)
    return concatenate(*(group_moments(feature_map, x_labeled[y == c], shift,
                                       chunk_rows=chunk_rows, name="x_labeled")
                         for c in range(num_classes)))
  x = validation.check_chunk("x_labeled", x_labeled, feature_maps.input_dim(feature_map),
                            kernel=True)
  labels = _checked_groups(y_labeled, num_classes, x)
  live = live_map(feature_map)          # zero columns skipped (``padded``)
  live_shift = np.asarray(shift, np.float32)[:feature_maps.num_features(live)]
  phi = point_features(live, x, chunk_rows).astype(np.float64) - live_shift
  with numerics.one_blas_thread():
    return padded(from_sums(*class_sums(phi, labels, num_classes),
                            live_shift.astype(np.float64)), shift)


def class_sums(phi: np.ndarray, labels: np.ndarray, num_classes: int):
  """(counts [k], first [k, p], outer [k, p, p]) float64 sums of the rows of phi [n, p] (shifted
  features) by class (labels in 0..k-1)."""
  counts = np.bincount(labels, minlength=num_classes).astype(np.float64)
  first = np.zeros((num_classes, phi.shape[1]))
  outer = np.zeros((num_classes, phi.shape[1], phi.shape[1]))
  for c in range(num_classes):
    rows = phi[labels == c]
    first[c], outer[c] = rows.sum(axis=0), rows.T @ rows
  return counts, first, outer


@jax.jit
def _features(feature_map, x):
  return feature_maps.features(feature_map, x)


def point_features(feature_map, x, chunk_rows: int = CHUNK_ROWS) -> np.ndarray:
  """[n, p] float32 psi(x) of a few points (labeled, held-out), in padded power-of-two chunks."""
  return numerics.in_row_buckets(functools.partial(_features, feature_map),
                                 np.asarray(x, np.float32), chunk_rows)


def feature_shift(feature_map, x, max_rows: int = CHUNK_ROWS) -> np.ndarray:
  """[p] float32 shift c: the mean of psi over the first ``max_rows`` points of ``x``."""
  if len(x) == 0:
    raise ValueError("feature_shift needs at least one point (the shift is their mean feature).")
  phi = point_features(live_map(feature_map), np.asarray(x[:max_rows], np.float32))  # others: 0
  shift = np.zeros(feature_maps.num_features(feature_map), np.float32)
  shift[:phi.shape[1]] = np.mean(phi.astype(np.float64), axis=0)
  return shift


@functools.lru_cache(maxsize=None)
def _strata_pass(mesh, axis_name, chunk_rows):
  """Per-device sums over the device's own stratum of a ``ShardedUnlabeled`` layout."""
  split = _P(axis_name)

  def local(sums, feature_map, shift, x, sizes):
    sums = jax.tree.map(lambda a: a[0], sums)
    size = sizes[jax.lax.axis_index(axis_name)]
    length = x.shape[0]
    rows = min(chunk_rows, length)

    def body(i, sums):
      nominal = i * rows
      start = jnp.minimum(nominal, length - rows)     # the last chunk overlaps: mask repeats
      index = start + jnp.arange(rows)
      groups = jnp.where((index >= nominal) & (index < size), 0, -1).astype(jnp.int32)
      chunk = jax.lax.dynamic_slice_in_dim(x, start, rows)
      return add_sums(sums, *chunk_sums(feature_map, shift, chunk, groups, 1))

    sums = jax.lax.fori_loop(0, -(-length // rows), body, sums)
    return jax.tree.map(lambda a: a[None], sums)

  return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=(split, _P(), _P(), split, _P()),
                               out_specs=split))


def sharded_unlabeled_moments(feature_map, unlabeled, shift, mesh, axis_name: str = "data",
                              chunk_rows: int = CHUNK_ROWS) -> Moments:
  """``Moments`` of a ``distributed.ShardedUnlabeled`` (strata over the devices of a mesh).

  Each device sums its own stratum in chunks (no copy of it), then one psum adds the devices:
  with ``distributed.load_unlabeled`` every process reads and holds only its own strata, and
  every process gets the same moments. One compilation per stratum length.

  Args:
    feature_map: ``FourierMap`` or ``NystromMap``.
    unlabeled: ``qsg_jax.distributed.ShardedUnlabeled`` (x [D * L, d] split over ``axis_name``).
    shift: [p] shift c.
    mesh: the mesh ``unlabeled`` lives on.
    axis_name: its axis.
    chunk_rows: rows per chunk on each device.

  Returns:
    ``Moments`` with one group.
  """
  devices = int(mesh.shape[axis_name])
  sizes, _ = sampling.strata(unlabeled.num_unlabeled, devices)
  split = jax.sharding.NamedSharding(mesh, _P(axis_name))
  live = live_map(feature_map)               # zero columns skipped (group_moments)
  live_shift = jnp.asarray(shift, jnp.float32)[:feature_maps.num_features(live)]
  sums = jax.device_put(init_sums(1, live_shift.shape[0], devices), split)
  sums = _strata_pass(mesh, axis_name, int(chunk_rows))(
      sums, live, live_shift, unlabeled.x, jnp.asarray(sizes, jnp.int32))
  return padded(finalize(sums, live_shift, mesh, axis_name), shift)


def mean_square_norm(moments: Moments, groups=None) -> float:
  """Mean of ||psi(x)||^2 over the points of ``groups`` (default all), from their moments.

  ||psi||^2 = ||psi - c||^2 + 2 c . (psi - c) + ||c||^2, so its group mean is
  tr(S_G) + 2 c . mu_G + ||c||^2: a Nystrom fit's kernel residual 1 - mean ||psi(x)||^2 over the
  labeled points without their [n_l, p] features (at 196,045 labels those took 23 of 27 s).
  """
  index = slice(None) if groups is None else np.asarray(groups)
  counts = moments.counts[index]
  c = moments.shift
  per_group = (np.einsum("gpp->g", moments.second[index]) + 2.0 * moments.means[index] @ c
               + c @ c)
  return float(np.sum(counts * per_group) / np.sum(counts))


def concatenate(*parts: Moments) -> Moments:
  """The groups of several ``Moments`` with the same shift, in order (e.g. classes, then U)."""
  shift = parts[0].shift
  if any(part.shift.shape != shift.shape or np.any(part.shift != shift) for part in parts):
    raise ValueError("Moments to concatenate must share their shift (compute them with the same "
                     "feature_shift).")
  return Moments(*(np.concatenate([getattr(part, f) for part in parts])
                   for f in ("counts", "means", "second")), shift)


def empty(num_features: int, shift) -> Moments:
  """``Moments`` of one empty group (no unlabeled data)."""
  p = int(num_features)
  return Moments(np.zeros(1), np.zeros((1, p)), np.zeros((1, p, p)),
                 np.asarray(shift, np.float32).astype(np.float64))


__all__ = ["CHUNK_ROWS", "Moments", "Sums", "add_chunk", "chunk_sums",
           "class_sums", "concatenate", "empty", "feature_shift", "finalize", "from_sums",
           "group_moments", "init_sums", "labeled_moments", "live_map", "mean_square_norm",
           "padded", "point_features", "RANK_STEP", "sharded_unlabeled_moments"]
