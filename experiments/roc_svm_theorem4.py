"""Theorem 4 of the ROC-SVM paper measured: |U_n(f_hat) - U~_B(f~_B)| against n.

    python -m experiments.roc_svm_theorem4 --output_dir=results/roc_svm

f_hat minimizes the full U-statistic hinge risk with the exact Gaussian kernel (Eq. 3, 10; our
exact sorted evaluation of U_n); f~_B minimizes the incomplete one (B = n pairs) on Nystrom
features with d landmarks (Eq. 14). Both on the radial synthetic model (Table 2's sigma and
lambda). For each n and d in {100, 300, n / log n} the script records the gap of the two
empirical risks (penalty excluded), the kernel approximation error E_2 = ||K - K~||_2 (power
iteration), N_max (most uses of one point in D_B), and the n-dependent part of the bound,
    sqrt(1 / B) + N_max / B (E_2 sqrt(n) + sqrt(N_max E_2 n^1.5 / B))      (A_1 = A_2 = A_3 = 1),
then draws the gaps on a log-log plot with that rate beside them (scaled to the first point).

Each (n, repetition) is written at once to --output_dir/cells/roc_svm_theorem4/; ``--resume``
continues an interrupted run from them (same flags required).
"""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from experiments.common import cli
from experiments.common import reporting
from experiments.common import store as store_lib
from qsg_jax.engine import kernels
from qsg_jax.roc_svm import model as model_lib
from qsg_jax.roc_svm import nystrom
from qsg_jax.roc_svm import objective as objective_lib
from qsg_jax.roc_svm import pairs as pairs_lib
from qsg_jax.roc_svm import synthetic

POWER_ITERATION_STREAM = 7   # fold_in(data key, this): the start vector of the E_2 iteration


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The measurement's settings (one flag each)."""
  output_dir: str = "results/roc_svm"
  sizes: tuple[int, ...] = cli.setting((500, 1000, 2000, 4000, 8000), "Training sizes n.",
                                       lower=10)
  repetitions: int = cli.setting(3, "Data sets per size.", lower=1)
  seed: int = cli.setting(0, "Base seed.")


def landmark_counts(n, ds=(100, 300, "n/log n")):
  """The d values of one size: fixed ones capped at n, and "n/log n" rounded."""
  return {str(d): min(n, int(round(n / math.log(n))) if d == "n/log n" else int(d)) for d in ds}


@jax.jit
def _residual_matvec(gram, feats, v):
  """(K - V V^T) v."""
  return gram @ v - feats @ (feats.T @ v)


def spectral_error(key, x, feature_map, sigma, iters=30):
  """E_2 = ||K - K~||_2 by power iteration (K - K~ is PSD for Nystrom)."""
  gram = kernels.gaussian_kernel(x, x, sigma)
  feats = nystrom.nystrom_features(feature_map, x)
  v = jax.random.normal(key, (x.shape[0],))
  v = v / jnp.linalg.norm(v)
  value = 0.0
  for _ in range(iters):
    w = _residual_matvec(gram, feats, v)
    value = float(jnp.linalg.norm(w))
    if value == 0.0:
      return 0.0
    v = w / value
  return value


def exact_full_risk(result, x, y):
  """U_n of a fitted model's training scores (hinge, exact by sorting)."""
  scores = model_lib.decision_function(result.model, x)
  return float(objective_lib.full_risk_sorted(jnp.asarray(scores[y > 0]),
                                              jnp.asarray(scores[y <= 0])))


def gaps(*, sizes=(500, 1000, 2000, 4000, 8000), repetitions=3, ds=(100, 300, "n/log n"),
         sigma=0.1, lam=1e-3, seed=0, log=cli.log_line, store=None):
  """Measures the gap of Theorem 4; returns (rows, payload).

  ``store``: a started ``store_lib.RunStore``; each (n, repetition) is written to it at once
  and taken from it on a resumed run.
  """
  rows = []
  for n in sizes:
    for rep in range(repetitions):
      rows += store_lib.cached(store, f"n{n}-rep{rep}",
                               lambda n=n, rep=rep: _measure(n, rep, ds, sigma, lam, seed, log))
  return rows, {"rows": rows, "sigma": sigma, "lam": lam, "repetitions": repetitions}


def _measure(n, rep, ds, sigma, lam, seed, log):
  """The rows of one data set of size n (one per d)."""
  rows = []
  key = jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), n), rep)
  x, y = (np.asarray(a) for a in synthetic.generate(key, n, "radial"))
  exact = model_lib.fit(x, y, kernel="gaussian", risk="full_sorted", lam=lam, sigma=sigma,
                        key=rep)
  u_full = exact_full_risk(exact, x, y)
  for name, d in landmark_counts(n, ds).items():
    fit = model_lib.fit(x, y, kernel="nystrom", num_landmarks=d, landmarks="uniform",
                        lam=lam, sigma=sigma, key=rep)
    coef = np.asarray(fit.model.coef, np.float64)
    u_incomplete = fit.value - 0.5 * lam * float(coef @ coef)   # risk of Eq. 14 at f~_B
    n_pos = int(y.sum())
    # The same pairs as the fit drew (fit splits its key into design and pairs).
    _, key_pairs = jax.random.split(jax.random.key(rep))
    pairs = pairs_lib.sample_pairs(key_pairs, n_pos, n - n_pos, n)
    n_max = int(max(np.bincount(np.asarray(pairs.positive)).max(),
                    np.bincount(np.asarray(pairs.negative)).max()))
    e2 = spectral_error(jax.random.fold_in(key, POWER_ITERATION_STREAM), jnp.asarray(x),
                        fit.model.feature_map,
                        sigma)
    b = n
    rate = (math.sqrt(1.0 / b)
            + n_max / b * (e2 * math.sqrt(n) + math.sqrt(n_max * e2 * n ** 1.5 / b)))
    rows.append({"n": n, "rep": rep, "d": name, "d_value": d, "U_n(f_hat)": u_full,
                 "U_B(f_tilde_B)": u_incomplete, "gap": abs(u_full - u_incomplete),
                 "E2": e2, "N_max": n_max, "bound_rate": rate})
    log(f"n={n} rep={rep} d={name}({d}): U_n={u_full:.5f} U_B={u_incomplete:.5f} "
        f"gap={rows[-1]['gap']:.5f} E2={e2:.3g} N_max={n_max}")
  return rows


def plot(rows, path):
  """Log-log plot of the mean gap per d against n, with the bound's rate and 1/sqrt(n)."""
  plt = reporting.pyplot()
  fig, ax = plt.subplots(figsize=(6, 4.5))
  for name in dict.fromkeys(r["d"] for r in rows):
    ns = sorted({r["n"] for r in rows if r["d"] == name})
    gap = [np.mean([r["gap"] for r in rows if r["d"] == name and r["n"] == n]) for n in ns]
    rate = [np.mean([r["bound_rate"] for r in rows if r["d"] == name and r["n"] == n])
            for n in ns]
    line, = ax.loglog(ns, gap, "o-", label=f"measured gap, d = {name}")
    ax.loglog(ns, np.array(rate) * gap[0] / rate[0], "--", color=line.get_color(),
              label=f"bound's rate (scaled), d = {name}")
  ns = np.array(sorted({r["n"] for r in rows}), float)
  first = np.mean([r["gap"] for r in rows if r["n"] == ns[0]])
  ax.loglog(ns, first * np.sqrt(ns[0] / ns), "k:", label="1 / sqrt(n)")
  ax.set_xlabel("n (B = n pairs)")
  ax.set_ylabel("|U_n(f_hat) - U~_B(f~_B)|")
  ax.set_title("Theorem 4: exact kernel + full U vs Nystrom + incomplete U")
  ax.legend(fontsize=7)
  fig.tight_layout()
  return reporting.save_figure(fig, path)


def run(settings: Settings, log=cli.log_line):
  """Measures every size; writes roc_svm_theorem4.{json,md,csv,png}; returns the rows."""
  store = store_lib.RunStore(settings.output_dir, "roc_svm_theorem4")
  store.start(settings.as_dict(exclude=cli.RUN_OPTIONS), resume=settings.resume,
              overwrite=settings.overwrite)
  rows, payload = gaps(sizes=settings.sizes, repetitions=settings.repetitions,
                       seed=settings.seed, log=log, store=store)
  plot(rows, store.dir / "roc_svm_theorem4.png")
  paths = store.finish(payload, [(None, rows, None)],
                       title="Theorem 4: gap of the empirical risks against n")
  log(paths["md"].read_text())
  return rows


if __name__ == "__main__":
  cli.script(Settings, run)
