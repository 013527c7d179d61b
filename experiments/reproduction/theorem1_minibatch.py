r"""Theorem 1 (O(1/t)) with labeled mini-batches, the papers' sampling (Algorithm 1, lines 2-3).

  nice -n 19 python -m experiments.reproduction.theorem1_minibatch --num_classes=2 \
      --labeled_batch_size=4 --output_dir=results/convergence_k2_minibatch

``experiments.convergence`` runs the engine with its default ``labeled_batch_size=None``: every
labeled point enters every step, so only the unlabeled mini-batch and the random features are
random. The theorem's algorithm samples the labeled points too (a positive and a negative per
step, or a mini-batch). This driver runs the very same experiment (same data, f*, schedule
eta_t = theta / t, seeds, checkpoints and slope fit; every flag of ``experiments.convergence``)
with ``--labeled_batch_size`` points per class sampled each step, by building the engine config
with that field set; nothing else changes. Results: ``experiments/reproduction/RESULTS.md``, run A.
"""

import dataclasses
import functools

from experiments import convergence
from experiments.common import cli
from qsg_jax import engine


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(convergence.Settings):
  """``experiments.convergence``'s settings and the labeled points sampled per class and step."""
  output_dir: str = "results/convergence_minibatch"
  labeled_batch_size: int = cli.setting(4, "Labeled points sampled per class and step.",
                                        lower=1)


def run(settings: Settings, log=cli.log_line):
  """``convergence.run`` with the engine config's ``labeled_batch_size`` set; its payload."""
  make_config = engine.make_config
  engine.make_config = functools.partial(make_config,
                                         labeled_batch_size=settings.labeled_batch_size)
  try:
    return convergence.run(settings, log)
  finally:
    engine.make_config = make_config


def main(argv):
  run(cli.settings_from_flags(Settings, argv))


if __name__ == "__main__":
  cli.define_flags(Settings)
  cli.run_main(main)
