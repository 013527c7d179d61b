r"""ROC-SVM Tables 1-2 on the paper's generator with 80 % negatives and a noise scale that gives
the paper's population AUC (``synthetic.PAPER_AUC_NOISE_SD``: radial 1.5734, linear 1.0313).

  nice -n 19 python -m experiments.reproduction.roc_svm_noise --table=2 --repetitions=50 \
      --output_dir=results/roc_svm_noise

The paper's Sec. 4.1 writes x ~ N2(0, I), eps ~ N(0, 1) and about 80 % negatives, and prints
population AUCs (0.90377 linear, 0.90985 radial) that this generator does not have (0.90809,
0.96471). ``experiments.roc_svm_tables --generator=paper_auc`` matches them by changing the share
of negatives (76.3 %, 56.3 %); this driver keeps 80 % negatives and scales eps instead. It runs
``experiments.roc_svm_tables`` unchanged (every flag of it; ``--generator`` stays "as_written",
i.e. 80 % negatives) with ``synthetic.generate`` and ``synthetic.population_auc`` given
``noise_sd`` (``--noise_sd``; default: the model's ``PAPER_AUC_NOISE_SD``), so the table's
"population AUC of our generator" line is this generator's Monte Carlo value. Results:
``experiments/reproduction/RESULTS.md``, run C.
"""

import dataclasses
import functools
import types
from typing import Optional

from experiments import roc_svm_tables
from experiments.common import cli
from qsg_jax.roc_svm import synthetic


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(roc_svm_tables.Settings):
  """``experiments.roc_svm_tables``' settings (one of Tables 1-2) and the noise scale."""
  output_dir: str = "results/roc_svm_noise"
  table: tuple[int, ...] = cli.setting((2,), "Which table to run: 1 or 2 (one of them).",
                                       lower=1, upper=2, nonempty=True)
  noise_sd: Optional[float] = cli.setting(None, "Standard deviation of eps (default: "
                                          "synthetic.PAPER_AUC_NOISE_SD of the table's model).",
                                          positive=True)

  def __post_init__(self):
    super().__post_init__()
    if len(self.table) != 1 or self.generator != "as_written":
      raise cli.UserError("run one table (--table=1 or --table=2) with --generator=as_written "
                          "(80 % negatives); the noise scale replaces the generator choice.")


def noisy_synthetic(noise_sd):
  """``synthetic`` with ``generate`` and ``population_auc`` drawing eps ~ N(0, noise_sd^2)."""
  return types.SimpleNamespace(
      generate=functools.partial(synthetic.generate, noise_sd=noise_sd),
      population_auc=functools.partial(synthetic.population_auc, noise_sd=noise_sd),
      PAPER_AUC_NEGATIVE_FRACTION=synthetic.PAPER_AUC_NEGATIVE_FRACTION)


def run(settings: Settings, log=cli.log_line):
  """``roc_svm_tables.run`` on the noisy generator."""
  model = "linear" if settings.table == (1,) else "radial"
  noise_sd = settings.noise_sd or synthetic.PAPER_AUC_NOISE_SD[model]
  settings = dataclasses.replace(settings, noise_sd=noise_sd)      # stored with the run
  log(f"{model} model, 80 % negatives, noise sd {noise_sd} (population AUC by quadrature "
      f"{synthetic.population_auc_quadrature(model, 0.8, noise_sd=noise_sd):.5f}; paper "
      f"{synthetic.PAPER_POPULATION_AUC[model]})")
  original = roc_svm_tables.synthetic
  roc_svm_tables.synthetic = noisy_synthetic(noise_sd)
  try:
    roc_svm_tables.run(settings, log)
  finally:
    roc_svm_tables.synthetic = original


def main(argv):
  run(cli.settings_from_flags(Settings, argv))


if __name__ == "__main__":
  cli.define_flags(Settings)
  cli.run_main(main)
