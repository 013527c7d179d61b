"""A dependency-free progress bar with ETA on stderr, for long experiment loops.

    bar = ProgressBar(total=trials * num_steps, unit="steps")
    bar.update(done)                 # redraws "[#####-----] 50% 512/1024 steps, ETA 0:12"
    bar.write("trial 1/2: ...")      # prints a line above the bar
    bar.close()

On a terminal the bar is redrawn in place; otherwise (a log file, a pipe) it prints a line at
most every 10% so logs stay short. The ETA extrapolates the rate of the units done since the
bar was created (a resumed run counts only its own work).
"""

import sys
import time


def format_seconds(seconds):
  """h:mm:ss, or m:ss under an hour."""
  seconds = int(round(max(seconds, 0)))
  h, rest = divmod(seconds, 3600)
  m, s = divmod(rest, 60)
  return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class ProgressBar:
  """Progress over ``total`` units; ``enabled=False`` makes every method a no-op."""

  def __init__(self, total, unit="steps", stream=None, enabled=True, width=30):
    self.total, self.unit, self.width = max(int(total), 1), unit, width
    self.stream = stream or sys.stderr
    self.enabled = enabled
    self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
    self.start = time.perf_counter()
    self.done = 0
    self._last_tenth = -1
    self._shown = False

  def text(self):
    """The bar line for the current state."""
    fraction = min(self.done / self.total, 1.0)
    filled = int(round(fraction * self.width))
    elapsed = time.perf_counter() - self.start
    eta = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
    eta_text = format_seconds(eta) if self.done else "?"
    return (f"[{'#' * filled}{'-' * (self.width - filled)}] {fraction:4.0%} "
            f"{self.done}/{self.total} {self.unit}, elapsed {format_seconds(elapsed)}, "
            f"ETA {eta_text}")

  def update(self, done):
    """Sets the units done so far and redraws."""
    self.done = min(int(done), self.total)
    if not self.enabled:
      return
    if self.tty:
      self.stream.write("\r" + self.text())
      self._shown = True
    else:
      tenth = int(10 * self.done / self.total)
      if tenth == self._last_tenth:
        return
      self._last_tenth = tenth
      self.stream.write(self.text() + "\n")
    self.stream.flush()

  def write(self, line, stream=None):
    """Prints ``line`` (to ``stream``, default stdout) without garbling the bar."""
    stream = stream or sys.stdout
    if self.tty and self._shown:
      self.stream.write("\r" + " " * len(self.text()) + "\r")
      self.stream.flush()
    print(line, file=stream, flush=True)
    if self.tty and self._shown:
      self.stream.write(self.text())
      self.stream.flush()

  def close(self):
    """Ends the bar's line."""
    if self.tty and self._shown:
      self.stream.write("\n")
      self.stream.flush()
    self._shown = False
