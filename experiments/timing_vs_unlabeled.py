r"""Training time against the number of unlabeled points: QSG vs the exact kernel methods (Fig. 1).

  QSG_JAX_DATA=../shared/data python -m experiments.timing_vs_unlabeled            # ~40 min
  QSG_JAX_DATA=../shared/data python -m experiments.timing_vs_unlabeled \
      --datasets=cod_rna --sizes=1000,5000,20000 --nofull                          # ~6 min

Both papers' Figure 1: labeled points fixed (200 binary, 500 ordinal), unlabeled points from 10^3
up to the whole set. Binary datasets time QSG-S2AUC, SAMULT and PNU-AUC; ordinal ones QS3ORAO,
M-SAMULT and M-PNU-AUC. All methods of a dataset train on identical data: one split
(``protocols.make_trial``) and nested unlabeled subsets (the first n of one permutation).

The exact methods refuse with ``InsufficientMemoryError`` before allocating their n x n matrices
when those would not fit in memory: the plot ends their line there with an "out of memory"
marker. Sizes above ``--exact_cap`` (``--exact_cap_ordinal``) that would fit are not run, to keep
the run time sane (a cubic solve: SAMULT at 20,000 takes ~2 min here, 50,000 would take ~30),
and are marked "not run (cap)".

Time is the wall time of one ``fit`` (training only: no data loading, no prediction). When that
first call takes under ``--rerun_below_s`` seconds the fit is run again and the second (warm)
time is reported, so compilation is excluded there; slower first calls are reported as they are
(compilation, a few seconds at most, is then a small share). Prints the exact-vs-QSG speed ratio
at n_u = 20,000 (the papers' claim: (M-)SAMULT at least 5x slower) and writes
timing_vs_unlabeled.{json,md,csv,png} into --output_dir. Each timed fit is written at once
(atomically) to --output_dir/cells/timing_vs_unlabeled/, and ``--resume`` continues an
interrupted run from them.
"""

import time

import dataclasses
from typing import Optional

import jax
import numpy as np

import qsg_jax
from qsg_jax import baselines
from qsg_jax import data as data_lib
from qsg_jax import memory
from qsg_jax.baselines import kernel_expansion
from experiments.common import cli
from experiments.common import protocols
from experiments.common import reporting
from experiments.common import store as store_lib

RATIO_AT = 20000          # the papers' speed claim is checked at this n_u
SPEEDUP_REQUIRED = 5.0    # ... where (M-)SAMULT must be at least this much slower
OK, OOM, CAPPED, FAILED = "ok", "out of memory", "not run (cap)", "failed"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The timing run's settings (one flag each)."""
  datasets: tuple[str, ...] = ("cod_rna", "ijcnn1", "sgemm")
  data_dir: Optional[str] = None
  output_dir: str = "results/timing_vs_unlabeled"
  sizes: tuple[int, ...] = cli.setting((1000, 2000, 5000, 10000, 20000, 50000, 100000),
                                       "Unlabeled sizes (those below the full set).", lower=1)
  full: bool = cli.setting(True, "Also time the whole unlabeled set.")
  exact_cap: int = cli.setting(20000, "Largest n_u the binary exact methods run.", lower=0)
  exact_cap_ordinal: int = cli.setting(10000, "Largest n_u M-SAMULT / M-PNU-AUC run (k-1 solves "
                                       "each).", lower=0)
  rerun_below_s: float = cli.setting(30.0, "Re-time fits whose first call took less than this "
                                     "(the warm time excludes compilation).", lower=0.0)
  num_labeled: Optional[int] = cli.setting(None, "Labeled points (default 200 binary, 500 "
                                           "ordinal).", lower=2)
  seed: int = cli.setting(0, "Seed of the split and the unlabeled permutation.")
  num_steps: int = cli.ENGINE_DEFAULTS["num_steps"]
  num_frequencies: int = cli.ENGINE_DEFAULTS["num_frequencies"]
  memory_fraction: float = cli.setting(0.8, "Share of free memory the exact methods' n x n "
                                       "matrices may take before they refuse.", positive=True,
                                       upper=1.0)


def methods_for(num_classes):
  """(name, fit function) of the QSG method and the two exact methods for k classes."""
  if num_classes == 2:
    return [("QSG-S2AUC", None), ("SAMULT", baselines.fit_samult),
            ("PNU-AUC", baselines.fit_pnu_auc)]
  return [("QS3ORAO", None), ("M-SAMULT", baselines.fit_m_samult),
          ("M-PNU-AUC", baselines.fit_m_pnu_auc)]


def qsg_fit_fn(num_classes, params):
  """A fit of QSG with the default hyper-parameters that blocks until training is done."""
  def fit(x_l, y_l, x_u):
    result = qsg_jax.fit(x_l, y_l, x_u, key=0, num_classes=num_classes, **params)
    jax.block_until_ready(result.model.coef)
  return fit


def exact_fit_fn(fit_function, num_classes, params, memory_fraction):
  """A fit of an exact method that blocks until its coefficients are computed."""
  def fit(x_l, y_l, x_u):
    kwargs = {} if num_classes == 2 else {"num_classes": num_classes}
    model = fit_function(x_l, y_l, x_u, memory_fraction=memory_fraction, **params, **kwargs)
    jax.block_until_ready(model.alpha)
  return fit


def time_fit(fit, x_l, y_l, x_u, rerun_below_s):
  """(reported seconds, first-call seconds): rerun once when the first call is quick."""
  start = time.perf_counter()
  fit(x_l, y_l, x_u)
  first = time.perf_counter() - start
  if first >= rerun_below_s:
    return first, first
  start = time.perf_counter()
  fit(x_l, y_l, x_u)
  return time.perf_counter() - start, first


def exact_status_above_cap(name, num_labeled, num_unlabeled, memory_fraction):
  """OOM if the exact method would refuse this size here, else CAPPED (and the message)."""
  try:
    kernel_expansion.check_kernel_memory(name, num_labeled, num_unlabeled,
                                         fraction=memory_fraction)
  except memory.InsufficientMemoryError as e:
    return OOM, str(e)
  return CAPPED, ""


def time_dataset(name, settings, params, log=cli.log_line, store=None):
  """Rows of (method, n_u, status, time) for one dataset.

  ``store``: a started ``store_lib.RunStore``; each timed fit is written to it at once and
  taken from it on a resumed run.
  """
  dataset = data_lib.load(name, data_dir=settings.data_dir)
  proto = protocols.protocol_for(dataset, settings.num_labeled)
  trial = protocols.make_trial(dataset, proto, settings.seed, eval_size=1)
  x_l, y_l = trial.x_labeled, trial.y_labeled
  num_u = trial.x_unlabeled.shape[0]
  order = protocols.seed_rng(settings.seed, "timing_order").permutation(num_u)
  grid = sorted({s for s in settings.sizes if s < num_u} | ({num_u} if settings.full else set()))
  if not grid:   # nothing to time: said, not a plotting traceback later
    raise cli.UserError(f"{name}: every --sizes value {list(settings.sizes)} is at least its "
                        f"{num_u} unlabeled points; pass smaller sizes or --full.")
  k = proto.num_classes
  cap = settings.exact_cap if k == 2 else settings.exact_cap_ordinal
  memory_fraction = settings.memory_fraction
  exact_params = dict(lam=params["lam"], sigma=params["sigma"], gamma=0.5)
  log(f"\n{name}: {x_l.shape[0]} labeled, unlabeled sizes {grid} (of {num_u}), k={k}, exact "
      f"methods capped at {cap}")
  rows, stopped = [], {}
  for n in grid:
    x_u = trial.x_unlabeled[order[:n]]
    for method, fit_function in methods_for(k):
      row = {"dataset": name, "method": method, "num_labeled": int(x_l.shape[0]),
             "num_unlabeled": n, "status": OK, "train_time_s": float("nan"),
             "first_call_s": float("nan"), "note": ""}
      if fit_function is None:
        fit = qsg_fit_fn(k, params)
      elif method in stopped:
        row["status"] = stopped[method]
        rows.append(row)
        log(f"  n_u={n:>7} {method:>10}: {row['status']} (at a smaller size already)")
        continue
      elif n > cap:
        row["status"], row["note"] = exact_status_above_cap(method, x_l.shape[0], n,
                                                            memory_fraction)
        row["needed_gib"] = kernel_expansion.required_bytes(x_l.shape[0] + n) / 2**30
        if row["status"] == OOM:   # capped sizes are re-checked: a larger one may not fit
          stopped[method] = OOM
        rows.append(row)
        log(f"  n_u={n:>7} {method:>10}: {row['status']} (needs {row['needed_gib']:.1f} GiB)")
        continue
      else:
        fit = exact_fit_fn(fit_function, k, exact_params, memory_fraction)

      def measure(row=row, fit=fit, x_u=x_u):
        try:
          row["train_time_s"], row["first_call_s"] = time_fit(fit, x_l, y_l, x_u,
                                                              settings.rerun_below_s)
        except memory.InsufficientMemoryError as e:
          row["status"], row["note"] = OOM, str(e)
        except (FloatingPointError, qsg_jax.DivergenceError) as e:
          row["status"], row["note"] = FAILED, str(e)[:200]
        return row

      row = store_lib.cached(store, f"{name}-{n}-{method}", measure)
      if row["status"] == OOM:
        stopped[method] = OOM
      rows.append(row)
      log(f"  n_u={n:>7} {method:>10}: {row['status']}, {row['train_time_s']:.2f} s (first "
          f"call {row['first_call_s']:.2f} s)")
  return rows


def speed_ratios(rows, at=RATIO_AT):
  """Exact time / QSG time per dataset and exact method at n_u = ``at`` (else the largest common
  n_u), and the smallest n_u from which QSG was faster at every larger size (None: never)."""
  out = []
  for name in dict.fromkeys(r["dataset"] for r in rows):
    mine = [r for r in rows if r["dataset"] == name and r["status"] == OK]
    qsg = {r["num_unlabeled"]: r["train_time_s"] for r in mine if r["method"].startswith("Q")}
    for method in dict.fromkeys(r["method"] for r in mine if not r["method"].startswith("Q")):
      exact = {r["num_unlabeled"]: r["train_time_s"] for r in mine if r["method"] == method}
      common = sorted(set(qsg) & set(exact))
      if not common:
        continue
      n = at if at in common else common[-1]
      # The smallest n_u from which QSG was faster at every larger size both ran.
      faster_from = None
      for m in reversed(common):
        if qsg[m] >= exact[m]:
          break
        faster_from = m
      out.append({"dataset": name, "method": method, "num_unlabeled": n,
                  "exact_time_s": exact[n], "qsg_time_s": qsg[n], "ratio": exact[n] / qsg[n],
                  "qsg_faster_from": faster_from})
  return out


def plot(rows, path):
  """One log-log panel per dataset; exact lines end with a cap marker and/or an OOM marker."""
  plt = reporting.pyplot()
  names = list(dict.fromkeys(r["dataset"] for r in rows))
  fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4), squeeze=False)
  for ax, name in zip(axes[0], names):
    mine = [r for r in rows if r["dataset"] == name]
    for i, method in enumerate(dict.fromkeys(r["method"] for r in mine)):
      series = [r for r in mine if r["method"] == method]
      done = [r for r in series if r["status"] == OK]
      color = f"C{i}"
      if done:
        ax.loglog([r["num_unlabeled"] for r in done], [r["train_time_s"] for r in done], "o-",
                  color=color, label=method)
      stops = [next((r for r in series if r["status"] == status), None)
               for status in (CAPPED, OOM)]
      for stop in (r for r in stops if r is not None):
        oom = stop["status"] == OOM
        if done:
          y = done[-1]["train_time_s"]
          ax.plot([done[-1]["num_unlabeled"], stop["num_unlabeled"]], [y, y], ":", color=color)
        else:   # refused at the smallest size: mark it at the bottom of the panel
          y = np.nanmin([r["train_time_s"] for r in mine])
        ax.plot(stop["num_unlabeled"], y, "X" if oom else "o", ms=10, color="red" if oom else
                color, mfc="red" if oom else "none")
        ax.annotate(f"{method}: {'out of memory' if oom else 'not run (cap)'}",
                    (stop["num_unlabeled"], y), textcoords="offset points",
                    xytext=(-110, -14 - 10 * (2 * i + oom)), fontsize=7,
                    color="red" if oom else color)
    ax.axvline(RATIO_AT, color="grey", lw=0.5, ls="--")
    ax.set_title(f"{name} ({mine[0]['num_labeled']} labeled)")
    ax.set_xlabel("unlabeled points n_u")
    ax.set_ylabel("training time (s)")
    ax.legend(fontsize=8)
  fig.tight_layout()
  reporting.save_figure(fig, path)


def ratio_checks(ratios, at=RATIO_AT, factor=SPEEDUP_REQUIRED):
  """The papers' speed claim per dataset: (M-)SAMULT time / QSG time >= ``factor`` at n_u = ``at``.

  A dataset where (M-)SAMULT was not timed at ``at`` (capped or out of memory) is reported with
  ``passed`` None and the ratio at the largest size both methods ran, never dropped.
  """
  out = []
  for r in ratios:
    if r["method"] not in ("SAMULT", "M-SAMULT"):
      continue
    measured = r["num_unlabeled"] == at
    out.append({"dataset": r["dataset"], "method": r["method"], "num_unlabeled": r["num_unlabeled"],
                "ratio": r["ratio"], "required": factor,
                "passed": bool(r["ratio"] >= factor) if measured else None,
                "note": "" if measured else f"{r['method']} not timed at n_u={at}; ratio at the "
                                            "largest size both ran"})
  return out


def run(settings: Settings, log=cli.log_line):
  """Times every method on every dataset and writes timing_vs_unlabeled.{json,md,csv,png}.

  QSG runs with the library's hyper-parameters (``num_steps`` and ``num_frequencies`` from the
  settings); the exact methods with its lam and sigma and gamma = 0.5.

  Returns:
    The JSON payload (dict with "rows", "ratios", "checks", ...).

  Raises:
    store_lib.StoreError, PermissionError: the output directory cannot be used as asked.
  """
  params = dict(cli.ENGINE_DEFAULTS, num_steps=settings.num_steps,
                num_frequencies=settings.num_frequencies)
  try:   # sizes the data cannot give: said before any run store starts
    protocols.check_num_labeled(settings.datasets, settings.num_labeled, settings.data_dir)
  except ValueError as e:
    raise cli.UserError(str(e)) from None
  store = store_lib.RunStore(settings.output_dir, "timing_vs_unlabeled")
  store.start(settings.as_dict(exclude=cli.RUN_OPTIONS), resume=settings.resume,
              overwrite=settings.overwrite)
  log(f"QSG hyper-parameters {params}; exact methods lam={params['lam']}, "
      f"sigma={params['sigma']}, gamma=0.5; devices {jax.devices()}; "
      f"{memory.available_bytes() / 2**30:.1f} GiB free")
  rows = []
  for name in settings.datasets:
    rows += time_dataset(name, settings, params, log=log, store=store)
  ratios = speed_ratios(rows)
  checks = ratio_checks(ratios)
  log("\nspeed ratio (exact time / QSG time), measured side by side:")
  for r in ratios:
    log(f"  {r['dataset']}: {r['method']} / QSG at n_u={r['num_unlabeled']}: "
        f"{r['exact_time_s']:.1f} s / {r['qsg_time_s']:.1f} s = {r['ratio']:.2f}x; "
        f"QSG faster from n_u={r['qsg_faster_from']}")
  log(f"\n(M-)SAMULT at least {SPEEDUP_REQUIRED}x slower than QSG at n_u={RATIO_AT}:")
  for c in checks:
    verdict = {True: "yes", False: "NO", None: "not measured"}[c["passed"]]
    log(f"  {c['dataset']}: {c['method']} / QSG = {c['ratio']:.2f}x at n_u={c['num_unlabeled']}"
        f" ({verdict}){'; ' + c['note'] if c['note'] else ''}")
  columns = ["dataset", "method", "num_labeled", "num_unlabeled", "status", "train_time_s",
             "first_call_s"]
  payload = {"qsg_hyperparams": params, "rows": rows, "ratios": ratios, "checks": checks}
  sections = [(None, rows, columns),
              ("Speed ratio (exact / QSG)", ratios,
               ["dataset", "method", "num_unlabeled", "exact_time_s", "qsg_time_s", "ratio",
                "qsg_faster_from"]),
              (f"(M-)SAMULT / QSG >= {SPEEDUP_REQUIRED} at n_u = {RATIO_AT}", checks, None)]
  png = store.dir / "timing_vs_unlabeled.png"
  plot(rows, png)
  paths = store.finish(payload, sections, title="Training time against unlabeled points")
  log(f"wrote {paths['json']}, {paths['md']}, {paths['csv']} and {png}")
  return payload


if __name__ == "__main__":
  cli.script(Settings, run)
