r"""Main job: QS3ORAO / QSG-S2AUC on a dataset over several trials, with the papers' protocols.

  python -m experiments.run                      # embedded default dataset, no data needed
  QSG_JAX_DATA=../shared/data python -m experiments.run --dataset=sgemm
  python -m experiments.run --dataset=sgemm --resume       # continue an interrupted run
  python -m experiments.plot results/sgemm                  # redraw its plots

Ordinal datasets (sgemm and other regression sets discretized into 5 equal-frequency classes,
embedded ordinal sets) run QS3ORAO with 500 labeled points and report ordinal AUC and MAE on the
unlabeled points; binary datasets run QSG-S2AUC with 200 labeled points and report AUC on test
data. Shows a progress bar with ETA and one line per trial (every training segment too with
--verbosity=1); writes each trial into --output_dir/trials/ the moment it ends, and at the end
run.json (with package versions, git commit, command line and devices), run.md, run.csv and
plots. Compilation is reported apart from the steady-state training time.

Several processes (one per host): --coordinator_address, --num_processes and --process_id (or
the JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and JAX_PROCESS_ID environment variables), or
--distributed on a managed cluster (SLURM, TPU pods, ...) where JAX finds them itself. --mesh
shards the unlabeled data over every device of every process. Only process 0 writes files.
"""

import sys

from absl import app
from absl import flags
from absl import logging
import jax

from experiments import common_flags
from experiments import main_job
from experiments import run_store
from qsg_jax import distributed

FLAGS = flags.FLAGS
DEFAULT_DATASET = "lev"


def _define_flags():
  """The job's flags (defined when it runs as a script, so tests can import it freely)."""
  common_flags.define_data_flags(dataset=DEFAULT_DATASET)
  common_flags.define_run_flags(output_dir="results/{dataset}")
  common_flags.define_eval_size_flag()
  common_flags.define_engine_flags()
  flags.adopt_module_key_flags(common_flags)   # --help lists the shared flags too
  flags.DEFINE_integer("num_labeled", None, "Labeled points (unset: 500 ordinal, 200 binary, at "
                       "most half the data).")
  flags.DEFINE_integer("num_classes", None, "k for regression targets (unset: 5).")
  flags.register_validator("num_labeled", lambda v: v is None or v >= 2,
                           "--num_labeled must be an integer >= 2 (one point per class at "
                           "least) or unset; pass e.g. --num_labeled=200.")
  flags.register_validator("num_classes", lambda v: v is None or v >= 2,
                           "--num_classes must be an integer >= 2 or unset; pass e.g. "
                           "--num_classes=5.")
  flags.DEFINE_enum("cv", "none", ["paper", "quick", "none"],
                    "Choose lam, sigma, gamma (step 'auto') by 5-fold CV on a separate split "
                    "before the trials, as the papers do: paper = their 539-point grid, quick = "
                    "12 points, none = the defaults (qsg_jax.defaults) or the flags given.")
  flags.DEFINE_integer("cv_unlabeled", 1000, "Unlabeled points the CV trains on.", lower_bound=1)
  common_flags.define_resume_flag()
  flags.DEFINE_bool("mesh", False, "Shard the unlabeled data over all jax.devices() (mesh "
                    "axis 'data').")
  flags.DEFINE_string("coordinator_address", None, "host:port of process 0 of a multi-process "
                      "run (unset: $JAX_COORDINATOR_ADDRESS, else a single process).")
  flags.DEFINE_integer("num_processes", None, "Processes of a multi-process run (unset: "
                       "$JAX_NUM_PROCESSES).")
  flags.DEFINE_integer("process_id", None, "This process's index, 0..num_processes-1 (unset: "
                       "$JAX_PROCESS_ID).")
  flags.DEFINE_bool("distributed", False, "Call jax.distributed.initialize() with no arguments "
                    "(a managed cluster such as SLURM or a TPU pod supplies them).")
  flags.register_validator("num_processes", lambda v: v is None or v >= 1,
                           "--num_processes must be an integer >= 1 or unset.")
  flags.register_validator("process_id", lambda v: v is None or v >= 0,
                           "--process_id must be an integer >= 0 or unset.")


def initialize_distributed(*, coordinator_address, num_processes, process_id, auto):
  """Starts JAX's multi-process runtime when asked; returns whether it was started.

  ``qsg_jax.distributed.initialize`` reads unset values from ``JAX_COORDINATOR_ADDRESS``,
  ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID`` (and lets JAX detect SLURM / Open MPI); ``auto``
  (--distributed) calls ``jax.distributed.initialize()`` for clusters where JAX finds them itself.
  """
  if auto and (coordinator_address, num_processes, process_id) == (None, None, None):
    jax.distributed.initialize()
    return True
  return distributed.initialize(coordinator_address, num_processes, process_id)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments {argv[1:]}; every setting is a --flag.")
  if FLAGS.verbosity < 1:   # the full log (JAX's backend messages included) only with -v 1
    logging.set_verbosity(logging.WARNING)
  initialize_distributed(coordinator_address=FLAGS.coordinator_address,
                         num_processes=FLAGS.num_processes, process_id=FLAGS.process_id,
                         auto=FLAGS.distributed)
  mesh = distributed.global_mesh() if FLAGS.mesh else None
  writer = jax.process_index() == 0
  try:
    main_job.run_job(
        dataset=FLAGS.dataset, data_dir=FLAGS.data_dir, num_labeled=FLAGS.num_labeled,
        num_classes=FLAGS.num_classes, eval_size=FLAGS.eval_size, seed=FLAGS.seed,
        trials=FLAGS.trials, output_dir=FLAGS.output_dir.format(dataset=FLAGS.dataset),
        params=common_flags.engine_kwargs(), resume=FLAGS.resume, mesh=mesh, cv=FLAGS.cv,
        cv_unlabeled=FLAGS.cv_unlabeled,
        show_progress=FLAGS.progress and writer, verbose=FLAGS.verbosity >= 1, writer=writer,
        log=lambda line: print(line, flush=True) if writer else None)
  except (run_store.ResumeError, PermissionError) as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
  _define_flags()
  app.run(main)
