"""Several processes (hosts) training one model: initialization, the global mesh, per-host data.

One command serves one machine, localhost processes and a cluster:

    distributed.initialize()                        # no-op for one process
    mesh = distributed.global_mesh()                # every device of every process, axis "data"
    x_u = distributed.load_unlabeled("x_u.npy", mesh)   # each process reads only its own strata
    data = engine.TrainData(x_l, y_l, x_u.x)
    state = engine.init(key, data, config, num_unlabeled=x_u.num_unlabeled)
    state, _ = engine.train_sharded(state, data, hyper, config, config.num_steps, mesh)

Stratum s of the unlabeled rows (``sampling.strata``) lives on the device at position s of the
mesh axis, whatever process owns it, so a run on P processes of D / P devices draws the same
samples and computes the same coefficients (to float32 rounding: sums are added in another
order) as a one-process run on D devices, or a one-device run with ``num_shards=D``.

Three recipes with the main job (``qsg_jax.fit(..., mesh=global_mesh())`` in a script is the same):

1. One machine: ``python -m experiments.run --dataset=sgemm --mesh`` (on CPU, add
   ``XLA_FLAGS=--xla_force_host_platform_device_count=4`` for 4 devices).
2. Processes on localhost: ``for i in 0 1; do XLA_FLAGS=--xla_force_host_platform_device_count=2
   python -m experiments.run --mesh --coordinator_address=127.0.0.1:12345 --num_processes=2
   --process_id=$i & done; wait``. A process never started (or two with one process_id)
   leaves the others waiting ``initialize``'s timeout_s (300 s) before JAX's error.
3. A cluster: the same command on every host with the three flags (or ``JAX_COORDINATOR_ADDRESS``,
   ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``); under SLURM or Open MPI pass ``--distributed``.

Each DSG step all-reduces a few vectors of 1 + 2(k-1)S + 2m floats (16 KB for sgemm), so each
all-reduce costs its latency, not bandwidth: more devices buy memory for the unlabeled set, not
speed. The direct solver sums its statistics with one all-reduce of the p x p moments.
"""

import hashlib
import os
from typing import NamedTuple, Optional

import jax
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax.engine import sampling

_P = jax.sharding.PartitionSpec

# Environment variables ``initialize`` reads when an argument is None (JAX itself reads the
# first; the other two are this library's, for launchers that set neither SLURM nor MPI ones).
COORDINATOR_ENV = "JAX_COORDINATOR_ADDRESS"
NUM_PROCESSES_ENV = "JAX_NUM_PROCESSES"
PROCESS_ID_ENV = "JAX_PROCESS_ID"
# Schedulers whose variables ``jax.distributed.initialize()`` detects by itself (size > 1).
_SCHEDULER_SIZE_ENVS = ("SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE")
_READ_ROWS = 1 << 16   # rows per read from an array-like source (bounds the transient copy)


def _env_int(name, value):
  if value is not None:
    return value
  text = os.environ.get(name)
  if text is None or text == "":
    return None
  try:
    return int(text)
  except ValueError:
    raise ValueError(f"environment variable {name}={text!r} must be an integer.") from None


def initialize(coordinator_address: Optional[str] = None, num_processes: Optional[int] = None,
               process_id: Optional[int] = None, timeout_s: int = 300) -> bool:
  """Joins this process to a multi-process run (``jax.distributed.initialize``); call it first.

  Arguments left None are read from the environment: ``JAX_COORDINATOR_ADDRESS``,
  ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``; with none of them set, a SLURM or Open MPI job of
  more than one task is detected by JAX itself. One process (``num_processes=1``, or nothing set
  anywhere) needs no initialization: this returns False and does nothing. On CPU, cross-process
  collectives use gloo (set here, before the backend starts).

  Args:
    coordinator_address: "host:port" of process 0, reachable from every process.
    num_processes: P, the number of processes.
    process_id: this process's index, 0 <= process_id < P.
    timeout_s: how long to wait for every process to join (JAX's initialization_timeout):
      a process never started, or two started with the same process_id, leave the others
      waiting this long, silently, before JAX's error.

  Returns:
    True if this call initialized a multi-process run, False for a single process.

  Raises:
    ValueError: only some of the three are set, or they are inconsistent.
    RuntimeError: called after JAX computations or a previous initialization.
  """
  timeout_s = validation.check_count("timeout_s", timeout_s, maximum=None)
  address = coordinator_address or os.environ.get(COORDINATOR_ENV) or None
  count = _env_int(NUM_PROCESSES_ENV, num_processes)
  index = _env_int(PROCESS_ID_ENV, process_id)
  if (address, count, index) == (None, None, None):
    if not any(_env_int(name, None) not in (None, 1) for name in _SCHEDULER_SIZE_ENVS):
      return False
  elif count == 1:
    return False
  elif None in (address, count, index):
    raise ValueError(
        f"a multi-process run needs all of coordinator_address, num_processes and process_id "
        f"(arguments or ${COORDINATOR_ENV}, ${NUM_PROCESSES_ENV}, ${PROCESS_ID_ENV}); received "
        f"coordinator_address={address!r}, num_processes={count!r}, process_id={index!r}. Set "
        "the missing ones, or none of them (and num_processes=1) for a single process.")
  elif not 0 <= index < count:
    raise ValueError(f"process_id must be in 0..num_processes-1; received process_id={index}, "
                     f"num_processes={count}.")
  if jax.distributed.is_initialized():
    raise RuntimeError("jax.distributed is already initialized; call initialize() once, before "
                       "any JAX computation.")
  jax.config.update("jax_cpu_collectives_implementation", "gloo")
  jax.distributed.initialize(coordinator_address=address, num_processes=count,
                             process_id=index, initialization_timeout=timeout_s)
  return True


def global_mesh(axis_name: str = "data") -> jax.sharding.Mesh:
  """A 1-D mesh over every device of every process (``jax.device_count()`` of them).

  Device order does not matter for the results: stratum s follows the mesh position s. Its axis
  is Auto (not recent JAX's Explicit default), so that arrays laid out on it can be indexed.
  """
  auto = getattr(getattr(jax.sharding, "AxisType", None), "Auto", None)
  return jax.make_mesh((jax.device_count(),), (axis_name,),
                       **({} if auto is None else {"axis_types": (auto,)}))


def check_same_on_every_process(mesh, **arrays) -> None:
  """Raises ``ValueError`` naming the first of ``arrays`` (name=array) that is not the same on
  every process of ``mesh``, as its computations assume (each process passes its own copy: a
  split drawn per process would train one model per process, the direct solver's without a
  word). Compares a sha256 per array, gathered from every process (a collective: every process
  of the mesh calls it in the same fit); a no-op for a mesh of one process's devices. Values
  that are not in-memory arrays (a memory map, read by the pass; an iterator; None) are
  compared by their kind only."""
  if len({device.process_index for device in mesh.devices.flat}) == 1:
    return
  from jax.experimental import multihost_utils  # pylint: disable=g-import-not-at-top

  def digest(value):
    if type(value) is np.ndarray:   # pylint: disable=unidiomatic-typecheck (not np.memmap)
      sha = hashlib.sha256(repr((value.shape, value.dtype)).encode())
      sha.update(np.ascontiguousarray(value))   # its buffer: no copy of the bytes
    else:
      sha = hashlib.sha256(type(value).__name__.encode())
    return np.frombuffer(sha.digest()[:16], np.uint32)

  digests = np.stack([digest(value) for value in arrays.values()])
  every = np.asarray(multihost_utils.process_allgather(digests))   # [P, len(arrays), 4]
  for i, name in enumerate(arrays):
    differ = np.nonzero(np.any(every[:, i] != every[0, i], axis=-1))[0]
    if differ.size:
      raise ValueError(f"{name} differs between the processes (process {int(differ[0])} of "
                       f"{every.shape[0]} holds another {name} than process 0); every process "
                       f"must pass the same {name} (draw splits with a fixed seed, not one per "
                       "process). Unlabeled rows read per process: distributed.load_unlabeled.")


class ShardedUnlabeled(NamedTuple):
  """The unlabeled set laid out in strata over a mesh axis (``engine.shard_unlabeled`` layout)."""
  x: jax.Array        # [D * L, d] float32, global; stratum s = rows s*L .. s*L + L - 1, padded.
  num_unlabeled: int  # n_u without the padding: pass to ``engine.init(num_unlabeled=...)``.


def _aligned_zeros(rows, cols):
  """[rows, cols] float32 zeros at a 64-byte aligned address, which the CPU backend aliases
  instead of copying (NumPy aligns to 16 bytes only)."""
  size = rows * cols * 4
  raw = np.zeros(size + 64, np.uint8)
  start = (-raw.ctypes.data) % 64
  return raw[start:start + size].view(np.float32).reshape(rows, cols)


# What the checks of the rows read call them (``_validation.check_chunk``: real numbers, finite,
# within float32, norms whose squares float32 holds; rows numbered in the whole source).
_SOURCE = "the unlabeled source"


def _npy_reader(path):
  """(shape, read(start, stop, out)) for an .npy file, reading rows with plain file reads.

  Plain reads (not a memory map) keep the file's pages out of this process's resident memory.
  """
  with open(path, "rb") as f:
    version = np.lib.format.read_magic(f)
    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                   else np.lib.format.read_array_header_2_0)
    shape, fortran, dtype = read_header(f)
    header = f.tell()
  if len(shape) != 2 or fortran or dtype.hasobject:
    raise ValueError(f"{path} must hold a C-ordered numeric [n_u, d] array; received shape "
                     f"{shape}, dtype {dtype}, fortran_order={fortran}. Save it with "
                     "np.save(path, np.ascontiguousarray(x, np.float32)).")
  row_bytes = shape[1] * dtype.itemsize

  def read(start, stop, out):
    with open(path, "rb") as f:
      f.seek(header + start * row_bytes)
      for lo in range(start, stop, _READ_ROWS):
        hi = min(stop, lo + _READ_ROWS)
        target = out[lo - start:hi - start]
        if dtype == np.float32:   # straight into the stratum: no temporary
          done = f.readinto(memoryview(target).cast("B"))
          rows = target
        else:
          rows = np.fromfile(f, dtype, count=(hi - lo) * shape[1])
          done = rows.size * dtype.itemsize
          rows = rows[:done // row_bytes * shape[1]].reshape(-1, shape[1])
        if done != (hi - lo) * row_bytes:
          raise ValueError(f"{path} is truncated: rows {lo}..{hi - 1} are missing.")
        target[:] = validation.check_chunk(_SOURCE, rows, shape[1], first_row=lo, kernel=True)

  return shape, read


def _array_reader(source):
  shape = tuple(np.shape(source))
  if len(shape) != 2:
    raise ValueError(f"the unlabeled source must be [n_u, d]; received shape {shape}.")

  def read(start, stop, out):
    for lo in range(start, stop, _READ_ROWS):
      hi = min(stop, lo + _READ_ROWS)
      out[lo - start:hi - start] = validation.check_chunk(_SOURCE, source[lo:hi], shape[1],
                                                          first_row=lo, kernel=True)

  return shape, read


def load_unlabeled(source, mesh: jax.sharding.Mesh, axis_name: str = "data") -> ShardedUnlabeled:
  """The unlabeled set over ``mesh``, each process reading only the strata of its own devices.

  No process holds more than its share (``ceil(n_u / D)`` rows per local device) plus one read
  buffer, so the set may exceed one host's memory. The result equals
  ``engine.shard_unlabeled(x_u, D)`` placed on the mesh.

  Args:
    source: path of an .npy file [n_u, d] (read with plain file reads), or any array-like with
      ``.shape`` and row slicing (``np.load(path, mmap_mode="r")``, an h5py or zarr dataset).
    mesh: ``jax.sharding.Mesh`` (e.g. ``global_mesh()``); D = ``mesh.shape[axis_name]``.
    axis_name: the mesh axis of the strata.

  Returns:
    ``ShardedUnlabeled``: x [D * L, d] float32 split over ``axis_name``, and n_u.

  Raises:
    TypeError: a mesh that is not one; values that are not real numbers (complex, text).
    ValueError: no such axis, a source that is not [n_u, d], fewer rows than strata, or
      values that are not finite, beyond float32, or whose squared norms overflow it (checked
      on the rows this process reads, named by their row in the source).

  Example:
    >>> unlabeled = load_unlabeled(np.ones((5, 2), np.float32), global_mesh())
    >>> unlabeled.num_unlabeled, unlabeled.x.shape[1], unlabeled.x.sharding.spec
    (5, 2, P('data',))
  """
  if not isinstance(mesh, jax.sharding.Mesh):
    raise TypeError(f"mesh must be a jax.sharding.Mesh; received {type(mesh).__name__}. Pass "
                    "distributed.global_mesh().")
  if axis_name not in mesh.shape:
    raise ValueError(f"mesh has no axis {axis_name!r}; its axes are {tuple(mesh.shape)}.")
  is_path = isinstance(source, (str, os.PathLike))
  (n_u, d), read = _npy_reader(source) if is_path else _array_reader(source)
  num_shards = int(mesh.shape[axis_name])
  sizes, offsets = sampling.strata(n_u, num_shards)
  rows = int(sizes.max())

  def stratum(index, device):
    """Stratum s on ``device``: read and placed (on CPU without a copy: the buffer is aliased)."""
    s = (index[0].start or 0) // rows
    out = _aligned_zeros(rows, d)
    read(int(offsets[s]), int(offsets[s] + sizes[s]), out[:sizes[s]])
    return jax.device_put(out, device, may_alias=True)

  sharding = jax.sharding.NamedSharding(mesh, _P(axis_name))
  shape = (num_shards * rows, d)
  # One stratum at a time (not make_array_from_callback, which holds every host buffer at once).
  parts = [stratum(index, device)
           for device, index in sharding.addressable_devices_indices_map(shape).items()]
  x = jax.make_array_from_single_device_arrays(shape, sharding, parts)
  return ShardedUnlabeled(x, n_u)
