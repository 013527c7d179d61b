r"""Main job: QS3ORAO / QSG-S2AUC on a dataset over several trials, with the papers' protocols.

  python -m experiments.run                      # embedded default dataset, no data needed
  QSG_JAX_DATA=../shared/data python -m experiments.run --dataset=sgemm

Ordinal datasets (sgemm and other regression sets discretized into 5 equal-frequency classes,
embedded ordinal sets) run QS3ORAO with 500 labeled points and report ordinal AUC and MAE on the
unlabeled points; binary datasets run QSG-S2AUC with 200 labeled points and report AUC on test
data. Prints each trial as it finishes and a mean/std summary; writes run.json and run.md into
--output_dir.
"""

import time

from absl import app
from absl import flags
from absl import logging
import jax
import jax.numpy as jnp
import numpy as np

import qsg_jax
from qsg_jax import data as data_lib
from experiments import protocols
from experiments import reporting

DEFAULT_DATASET = "lev"

_DATASET = flags.DEFINE_string("dataset", DEFAULT_DATASET,
                               "Dataset name; see qsg_jax.data.available().")
_DATA_DIR = flags.DEFINE_string("data_dir", None, "Directory of data files (default "
                                "$QSG_JAX_DATA, then the user cache).")
_TRIALS = flags.DEFINE_integer("trials", 10, "Number of trials (random splits).")
_SEED = flags.DEFINE_integer("seed", 0, "Seed of trial 0; trial t uses seed + t.")
_OUTPUT_DIR = flags.DEFINE_string("output_dir", None, "Where to write results "
                                  "(default results/<dataset>).")
_NUM_LABELED = flags.DEFINE_integer("num_labeled", None, "Labeled points (default: 500 ordinal, "
                                    "200 binary, at most half the data).")
_NUM_CLASSES = flags.DEFINE_integer("num_classes", None, "k for regression targets (default 5).")
_EVAL_SIZE = flags.DEFINE_integer(
    "eval_size", 20000, "Score AUC on a random subset of this many evaluation points; 0 = all "
    "(predicting all 241,100 unlabeled SGEMM points through every block costs ~1.5 min/trial).")
_SIGMA = flags.DEFINE_float("sigma", None, "Kernel parameter, k(x,x') = exp(-sigma |x-x'|^2).")
_LAM = flags.DEFINE_float("lam", None, "Regularization lambda.")
_GAMMA = flags.DEFINE_float("gamma", None, "Trade-off: 1 = labeled pairs only, 0 = PU+NU only.")
_STEP_SIZE = flags.DEFINE_float("step_size", None,
                               "Initial step eta0 of eta_t = eta0 / (1 + eta0 lam t).")
_NUM_STEPS = flags.DEFINE_integer("num_steps", None, "Iterations T (= feature blocks).")
_NUM_FREQUENCIES = flags.DEFINE_integer("num_frequencies", None, "Frequencies m per block.")
_UNLABELED_BATCH = flags.DEFINE_integer("unlabeled_batch_size", None, "Unlabeled points/step.")
_LABELED_BATCH = flags.DEFINE_integer("labeled_batch_size", None, "Per-class labeled batch; "
                                      "default: every labeled point every step.")
_LOSS = flags.DEFINE_enum("loss", "squared", ["squared", "hinge", "logistic"], "Pairwise loss.")


def hyperparams_from_flags():
  """Default hyper-parameters with every flag the user set applied on top."""
  params = dict(protocols.DEFAULT_HYPERPARAMS)
  for name, flag in [("sigma", _SIGMA), ("lam", _LAM), ("gamma", _GAMMA), ("step_size", _STEP_SIZE),
                     ("num_steps", _NUM_STEPS), ("num_frequencies", _NUM_FREQUENCIES),
                     ("unlabeled_batch_size", _UNLABELED_BATCH),
                     ("labeled_batch_size", _LABELED_BATCH)]:
    if flag.value is not None:
      params[name] = flag.value
  params["loss"] = _LOSS.value
  return params


def run_trial(dataset, proto, seed, params, eval_size):
  """Trains on one split and scores it; returns a dict of results."""
  trial = protocols.make_trial(dataset, proto, seed, eval_size)

  def progress(report):
    logging.info("  step %d/%d, max |f| on labeled points %.3g", report["step"],
                 report["num_steps"], report["max_abs_score"])

  start = time.perf_counter()
  result = qsg_jax.fit(trial.x_labeled, trial.y_labeled, trial.x_unlabeled, key=seed,
                       num_classes=proto.num_classes, progress=progress, **params)
  jax.block_until_ready(result.model.coef)
  train_time = time.perf_counter() - start
  start = time.perf_counter()
  scores = qsg_jax.decision_function(result, trial.x_eval)
  predict_time = time.perf_counter() - start
  if not np.all(np.isfinite(scores)):
    raise FloatingPointError(f"trial {seed}: non-finite scores on the evaluation points.")
  y_eval = jnp.asarray(trial.y_eval)
  auc = float(qsg_jax.ordinal_auc(jnp.asarray(scores), y_eval, proto.num_classes))
  classes = qsg_jax.predict_classes(jnp.asarray(scores), result.thresholds)
  mae = float(qsg_jax.mean_absolute_error(classes, y_eval))
  return {"seed": seed, "auc": auc, "mae": mae, "train_time_s": train_time,
          "predict_time_s": predict_time, "num_labeled": int(trial.x_labeled.shape[0]),
          "num_unlabeled": int(trial.x_unlabeled.shape[0]), "num_eval": int(trial.x_eval.shape[0]),
          "evaluated_on": trial.eval_description}


def main(argv):
  del argv
  dataset = data_lib.load(_DATASET.value, data_dir=_DATA_DIR.value)
  proto = protocols.protocol_for(dataset, _NUM_LABELED.value, _NUM_CLASSES.value)
  params = hyperparams_from_flags()
  method = "QSG-S2AUC" if proto.num_classes == 2 else "QS3ORAO"
  metric = ("AUC" if proto.num_classes == 2
            else f"ordinal AUC (mean over {proto.num_classes - 1} splits)")
  print(f"{method} on {dataset.name}: {dataset.x.shape[0]} points, {dataset.x.shape[1]} features, "
        f"k={proto.num_classes}, {proto.num_labeled} labeled, {_TRIALS.value} trials")
  print(f"hyper-parameters: {params}")
  print(f"devices: {jax.devices()}")
  rows = []
  for t in range(_TRIALS.value):
    row = run_trial(dataset, proto, _SEED.value + t, params, _EVAL_SIZE.value)
    rows.append(row)
    print(f"trial {t + 1}/{_TRIALS.value}: {metric} {row['auc']:.4f}, MAE {row['mae']:.3f}, "
          f"train {row['train_time_s']:.1f} s, predict {row['predict_time_s']:.1f} s "
          f"({row['num_eval']} points)", flush=True)
  auc = reporting.mean_std([r["auc"] for r in rows])
  mae = reporting.mean_std([r["mae"] for r in rows])
  train = reporting.mean_std([r["train_time_s"] for r in rows])
  print(f"\n{method} on {dataset.name}, {len(rows)} trials, scored on {rows[0]['evaluated_on']}:")
  print(f"  {metric}: {auc[0]:.4f} +- {auc[1]:.4f} (std)")
  print(f"  MAE: {mae[0]:.3f} +- {mae[1]:.3f}")
  print(f"  training time per trial: {train[0]:.1f} +- {train[1]:.1f} s")
  summary = {"dataset": dataset.name, "method": method, "protocol": proto.__dict__,
             "hyperparams": params, "evaluated_on": rows[0]["evaluated_on"],
             "auc_mean": auc[0], "auc_std": auc[1], "mae_mean": mae[0], "mae_std": mae[1],
             "train_time_mean_s": train[0], "trials": rows}
  output_dir = _OUTPUT_DIR.value or f"results/{dataset.name}"
  paths = reporting.write_results(
      output_dir, "run", summary, rows=rows + [{"seed": "mean", "auc": auc[0], "mae": mae[0],
                                                "train_time_s": train[0]},
                                               {"seed": "std", "auc": auc[1], "mae": mae[1],
                                                "train_time_s": train[1]}],
      columns=["seed", "auc", "mae", "train_time_s", "predict_time_s", "num_eval"],
      title=f"{method} on {dataset.name} ({metric} on {rows[0]['evaluated_on']})")
  print(f"wrote {paths['json']} and {paths['md']}")


if __name__ == "__main__":
  app.run(main)
