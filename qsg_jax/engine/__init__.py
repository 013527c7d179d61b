"""The pure, jittable core of QS3ORAO / QSG-S2AUC: ``init`` / ``train`` / ``model_scores``.

    config = EngineConfig(num_classes=k, num_steps=T)            # static, checked when built
    state = init(key, data, config)                              # everything the update needs
    state, metrics = train(state, data, hyper, config, T)        # T DSG iterations (Eqs. 13-14)
    scores = model_scores(model_of(state), x)                    # f(x), Algorithm 2

Modules: ``types`` (the static config, hyper-parameters, state), ``step`` (one DSG iteration and
its step size), ``loop`` (the training loop; ``bucket_data`` pads rows so that a new data size
reuses a compilation), ``scoring`` (prediction through every block), ``sharding`` (the
multi-device layout), ``corrections`` (optional per-split corrections: split j
ranks with f + g_j, ``split_lam``), ``checks`` (concrete inputs raise, traced ones poison with
NaN). The engine computes in float32 under ``jax_enable_x64`` too. Building blocks:
``features`` (random Fourier features), ``sampling``, ``losses`` (l1'..l6'), ``risk`` (the
mini-batch risk and its score gradients), ``update`` (Eqs. 13-14), ``kernels`` (exact Gaussian
kernels), ``reference`` (literal Algorithm 1), ``auto_step`` (the default eta0), ``grouped``
(the grouped cross-validation runner).
"""

from qsg_jax.engine import auto_step
from qsg_jax.engine import corrections
from qsg_jax.engine import features
from qsg_jax.engine import grouped
from qsg_jax.engine import kernels
from qsg_jax.engine import losses
from qsg_jax.engine import reference
from qsg_jax.engine import risk
from qsg_jax.engine import sampling
from qsg_jax.engine import update
from qsg_jax.engine.loop import bucket_data
from qsg_jax.engine.loop import init
from qsg_jax.engine.loop import train
from qsg_jax.engine.loop import train_chunk
from qsg_jax.engine.loop import trim_state
from qsg_jax.engine.loop import use_unlabeled_cache
from qsg_jax.engine.scoring import model_of
from qsg_jax.engine.scoring import model_scores
from qsg_jax.engine.sharding import model_scores_sharded
from qsg_jax.engine.sharding import place_train_data
from qsg_jax.engine.sharding import shard_unlabeled
from qsg_jax.engine.sharding import train_sharded
from qsg_jax.engine.corrections import split_scores
from qsg_jax.engine.step import inverse_time_schedule
from qsg_jax.engine.step import step_size
from qsg_jax.engine.types import EngineConfig
from qsg_jax.engine.types import Hyperparams
from qsg_jax.engine.types import Model
from qsg_jax.engine.types import ScalarOrSchedule
from qsg_jax.engine.types import State
from qsg_jax.engine.types import TrainData
from qsg_jax.engine.types import make_config

__all__ = (
    "EngineConfig",
    "Hyperparams",
    "Model",
    "ScalarOrSchedule",
    "State",
    "TrainData",
    "bucket_data",
    "init",
    "inverse_time_schedule",
    "make_config",
    "model_of",
    "model_scores",
    "model_scores_sharded",
    "place_train_data",
    "shard_unlabeled",
    "split_scores",
    "step_size",
    "train",
    "train_chunk",
    "train_sharded",
    "trim_state",
    "use_unlabeled_cache",
)
