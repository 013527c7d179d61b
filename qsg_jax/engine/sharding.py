"""The multi-device layout: unlabeled strata split over a mesh axis with ``shard_map``.

Each device holds one stratum of the unlabeled points (``config.num_shards`` = the axis size),
scores its share of every chunk through all blocks, and the per-step gradient is combined with
one ``psum`` of a [2m] vector and two of [S] vectors; labeled points and coefficients are
replicated. Equals ``train`` with the same ``num_shards`` on one device.
"""

import functools
from typing import Tuple

import jax
import jax.numpy as jnp

from qsg_jax import numerics
from qsg_jax.config import BLOCK_GROUP
from qsg_jax.config import PREDICT_CHUNK
from qsg_jax.engine import sampling
from qsg_jax.engine.types import EngineConfig
from qsg_jax.engine.types import Hyperparams
from qsg_jax.engine.types import Model
from qsg_jax.engine.types import State
from qsg_jax.engine.types import TrainData
from qsg_jax.engine.step import Metrics
from qsg_jax.engine import checks
from qsg_jax.engine.loop import train_steps
from qsg_jax.engine.scoring import unscaled_scores

_P = jax.sharding.PartitionSpec


def shard_unlabeled(x_unlabeled, num_shards: int) -> jax.Array:
  """Lays the unlabeled rows out as ``num_shards`` equal blocks, one stratum each (zero padded).

  Args:
    x_unlabeled: [n_u, d].
    num_shards: D.

  Returns:
    [D * L, d] with L = ceil(n_u / D); stratum s (``sampling.strata``) starts at row s * L.
    Padding rows are never sampled. Pass ``num_unlabeled=n_u`` to ``init``.
  """
  sizes, offsets = sampling.strata(x_unlabeled.shape[0], num_shards)
  rows = int(sizes.max())
  parts = [jnp.pad(x_unlabeled[o:o + n], ((0, rows - n), (0, 0))) for o, n in zip(offsets, sizes)]
  return jnp.concatenate(parts)


def _put(tree, sharding: jax.sharding.Sharding):
  """``jax.device_put`` of every leaf, PRNG keys included.

  On a mesh spanning several processes ``device_put`` accepts host values and uncommitted
  arrays (checking they are equal on every process) but not typed PRNG keys: their raw data is
  placed instead and wrapped again.
  """
  def put(x):
    if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
      data = jax.device_put(jax.random.key_data(x), sharding)
      return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
    return jax.device_put(x, sharding)
  return jax.tree.map(put, tree)


def _check_mesh(mesh, axis_name, config):
  if axis_name not in mesh.shape:
    raise ValueError(f"mesh has no axis {axis_name!r}; its axes are {tuple(mesh.shape)}.")
  if mesh.shape[axis_name] != config.num_shards:
    raise ValueError(f"config.num_shards={config.num_shards} must equal the size "
                     f"{mesh.shape[axis_name]} of mesh axis {axis_name!r}.")


def place_train_data(data: TrainData, mesh: jax.sharding.Mesh,
                     axis_name: str = "data") -> TrainData:
  """``data`` on ``mesh``: labeled points replicated, unlabeled strata split over ``axis_name``.

  ``train_sharded`` does this on every call; arrays already placed are kept as they are. Place
  the data once before calling it repeatedly with host (NumPy) data on several processes: each
  placement of host data checks it is equal on every process, which gathers it.

  Args:
    data: ``TrainData`` whose ``x_unlabeled`` is the strata layout ([D * L, d], from
      ``shard_unlabeled`` or ``qsg_jax.distributed.load_unlabeled``).
    mesh: ``jax.sharding.Mesh``.
    axis_name: the mesh axis of the strata.

  Returns:
    ``TrainData`` of global ``jax.Array``s.
  """
  replicated = jax.sharding.NamedSharding(mesh, _P())
  return TrainData(*_put((data.x_labeled, data.y_labeled), replicated),
                   _put(data.x_unlabeled, jax.sharding.NamedSharding(mesh, _P(axis_name))))


def train_sharded(state: State, data: TrainData, hyper: Hyperparams, config: EngineConfig,
                  num_steps: int, mesh: jax.sharding.Mesh,
                  axis_name: str = "data") -> Tuple[State, Metrics]:
  """``train`` with the unlabeled set split over the devices of ``mesh`` axis ``axis_name``.

  Args:
    state: ``State`` from ``init(key, data, config, num_unlabeled=n_u)`` (replicated).
    data: ``TrainData`` whose ``x_unlabeled`` is ``shard_unlabeled(x_u, num_shards)``.
    hyper: ``Hyperparams``.
    config: ``EngineConfig`` with ``num_shards`` = mesh.shape[axis_name] (``axis_name`` unset:
      this function sets it).
    num_steps: iterations to run, as in ``train``.
    mesh: ``jax.sharding.Mesh`` (may span several hosts after ``jax.distributed.initialize``).
    axis_name: the mesh axis to split the unlabeled data over.

  Returns:
    (new state, metrics), replicated.

  Raises:
    ValueError: ``config.split_corrections`` (per-split corrections run on one device only).
  """
  if config.split_corrections:
    raise ValueError("train_sharded does not support per-split corrections "
                     "(config.split_corrections=True): train them on one device with "
                     "engine.train (qsg_jax.fit without a mesh), or use split_lam=None.")
  _check_mesh(mesh, axis_name, config)
  num_steps = checks.check_training(state, data, hyper, config, num_steps, sharded=True)
  config = config.replace(axis_name=axis_name)
  replicated = jax.sharding.NamedSharding(mesh, _P())
  split = jax.sharding.NamedSharding(mesh, _P(None, axis_name))
  state = _put(state._replace(head_unlabeled=None), replicated)._replace(
      head_unlabeled=_put(state.head_unlabeled, split))
  hyper = _put(numerics.as_float32(hyper), replicated)   # one program for any float types
  data = place_train_data(data, mesh, axis_name)
  return _train_sharded_jit(state, data, hyper, config, num_steps, mesh)


@functools.partial(jax.jit, static_argnames=("config", "num_steps", "mesh"))
def _train_sharded_jit(state, data, hyper, config, num_steps, mesh):
  data_specs = TrainData(_P(), _P(), _P(config.axis_name))
  state_specs = jax.tree.map(lambda _: _P(), state)._replace(
      head_unlabeled=_P(None, config.axis_name))
  fn = jax.shard_map(
      functools.partial(train_steps, config=config, num_steps=num_steps),
      mesh=mesh, in_specs=(state_specs, data_specs, _P()),
      out_specs=(state_specs, _P()), check_vma=False)
  return fn(state, data, hyper)


def model_scores_sharded(model: Model, x, mesh: jax.sharding.Mesh, axis_name: str = "data",
                         block_group: int = BLOCK_GROUP,
                         predict_chunk: int = PREDICT_CHUNK) -> jax.Array:
  """``model_scores`` with the points split over the devices of ``mesh`` axis ``axis_name``.

  Args:
    model: trained ``Model`` (replicated to every device).
    x: [n, d] points.
    mesh: ``jax.sharding.Mesh``.
    axis_name: mesh axis to split the points over.
    block_group: blocks per matrix product.
    predict_chunk: points per matrix product on each device.

  Returns:
    [n] scores, replicated.
  """
  if axis_name not in mesh.shape:
    raise ValueError(f"mesh has no axis {axis_name!r}; its axes are {tuple(mesh.shape)}.")
  devices = mesh.shape[axis_name]
  n = x.shape[0]
  per_device = -(-n // devices)
  x = jnp.pad(jnp.asarray(x), ((0, per_device * devices - n), (0, 0)))
  x = jax.device_put(x, jax.sharding.NamedSharding(mesh, _P(axis_name)))
  replicated = jax.sharding.NamedSharding(mesh, _P())
  model = _put(model, replicated)
  scores = _scores_sharded_jit(model, x, mesh, axis_name, block_group, predict_chunk)
  return gathered(scores, n, replicated)


@functools.partial(jax.jit, static_argnames=("rows", "replicated"))
def gathered(array: jax.Array, rows: int, replicated: jax.sharding.NamedSharding) -> jax.Array:
  """The first ``rows`` rows of ``array`` (split over a mesh) laid out whole on every device of
  ``replicated`` (``NamedSharding(mesh, P())``): an all-gather whose result every process can
  read. Both steps are needed on JAX 0.10.2: ``jax.reshard`` alone left an array on an Auto
  axis split (on one process it still converted to NumPy, on two it raised "spans
  non-addressable devices"), the sharding constraint alone leaves an Explicit axis's type
  split, which cannot be sliced."""
  whole = jax.lax.with_sharding_constraint(jax.reshard(array, replicated), replicated)
  return whole[:rows]


@functools.partial(jax.jit, static_argnames=("mesh", "axis_name", "block_group", "predict_chunk"))
def _scores_sharded_jit(model, x, mesh, axis_name, block_group, predict_chunk):
  fn = jax.shard_map(lambda m, xs: m.scale * unscaled_scores(m, xs, block_group, predict_chunk),
                     mesh=mesh, in_specs=(_P(), _P(axis_name)), out_specs=_P(axis_name),
                     check_vma=False)
  return fn(model, x)

