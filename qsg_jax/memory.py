"""Predictable memory use: check an allocation against what the device has before making it."""

import os
from typing import Optional

import jax

from qsg_jax.errors import InsufficientMemoryError


def available_bytes(device: Optional[jax.Device] = None) -> int:
  """Bytes free on ``device`` (default: the first JAX device).

  Accelerators report ``bytes_limit - bytes_in_use`` from ``Device.memory_stats()``; on CPU
  this reads ``MemAvailable`` from /proc/meminfo (falling back to total physical memory).
  """
  device = device or jax.devices()[0]
  stats = None
  if device.platform != "cpu":
    try:
      stats = device.memory_stats()
    except Exception:  # pylint: disable=broad-except
      stats = None
  if stats and "bytes_limit" in stats:
    return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
  try:
    with open("/proc/meminfo") as f:
      for line in f:
        if line.startswith("MemAvailable:"):
          return int(line.split()[1]) * 1024
  except OSError:
    pass
  return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_allocation(nbytes: int, what: str, fix: str, fraction: float = 0.8,
                     device: Optional[jax.Device] = None) -> None:
  """Raises ``InsufficientMemoryError`` if ``nbytes`` exceeds ``fraction`` of free memory.

  Args:
    nbytes: bytes the caller is about to allocate (sum of its large arrays).
    what: description of the allocation, e.g. "the 50000 x 50000 kernel matrix of PNU-AUC".
    fix: what the user can do instead, e.g. "use fewer unlabeled points or qsg_jax.fit".
    fraction: share of free memory that one allocation may take.
    device: device to check; default the first JAX device.
  """
  free = available_bytes(device)
  if nbytes > fraction * free:
    raise InsufficientMemoryError(
        f"{what} needs {nbytes / 2**30:.2f} GiB but only {free / 2**30:.2f} GiB is free "
        f"(limit {fraction:.0%} of free memory). {fix}")


def fit_bytes(config, num_labeled: int, num_unlabeled: int, dim: int) -> int:
  """Bytes of the large arrays of one training run (``qsg_jax.fit``, one CV task).

  Args:
    config: the run's ``engine.EngineConfig``.
    num_labeled, num_unlabeled: n_l and n_u (per device when sharded); dim: d.

  The coefficients [T, 2m] (and [T, 2m, k-1] per-split corrections), features of the labeled
  points or batches and of the unlabeled pool, and the samples of one chunk of steps, float32.
  """
  two_m, chunk, batch = 2 * config.num_frequencies, config.chunk_size, config.unlabeled_batch_size
  splits = config.num_classes - 1 if config.split_corrections else 0
  labeled = num_labeled if config.labeled_batch_size is None else min(
      num_labeled, config.num_classes * config.labeled_batch_size)
  drawn = 0 if config.labeled_batch_size is None else config.num_classes * config.labeled_batch_size
  pool = num_unlabeled if config.cache_unlabeled else chunk * (batch + 1) * (1 + config.block_group)
  return 4 * (config.num_steps * two_m * (1 + splits) + 3 * labeled * two_m * (1 + splits)
              + 2 * pool * two_m + chunk * (batch + drawn) * (dim + two_m))
