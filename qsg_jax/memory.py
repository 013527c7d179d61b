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
