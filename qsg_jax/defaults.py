"""Default hyper-parameters: the one place ``qsg_jax.fit``, the estimators and the experiments read.

sigma, lam and gamma were found on SGEMM (500 labels, min-max scaled features; see SPEC.md's
performance notes): ordinal AUC about 0.889 with T = 1024 steps. They are a starting point, not a
substitute for cross-validation (``qsg_jax.model_selection``). The step is "auto" (below).
"""

SIGMA = 0.1                 # Gaussian kernel k(x, x') = exp(-sigma ||x - x'||^2).
LAM = 1e-3                  # regularization lambda.
GAMMA = 0.5                 # PN vs PU + NU trade-off (1 = labeled pairs only).
STEP_SIZE = "auto"          # eta0 of eta0 / (1 + eta0 lam t) by the rule below; or a number.
NUM_STEPS = 1024            # T iterations = T feature blocks.
NUM_FREQUENCIES = 32        # m frequencies per block (2m features).
UNLABELED_BATCH_SIZE = 128  # B unlabeled points per step.
LABELED_BATCH_SIZE = None   # per-class labeled batch; None = every labeled point every step.
LOSS = "squared"            # the papers' pairwise loss (1 - u + v)^2.
CHUNK_SIZE = 32             # steps whose samples are drawn up front (speed only).
BLOCK_GROUP = 8             # feature blocks per matrix product when scoring (speed only).
PREDICT_CHUNK = 4096        # points per matrix product when scoring (speed only).

# Max |f| on the labeled points above which a run counts as diverged. With the squared pairwise
# loss (target margin 1) converging runs stay near 1-3 (sgemm, ijcnn1, cod-rna, skin at stable
# settings); unstable ones on skin (eta0 = 3, sigma = 1) peaked at 116-11,000 and ended at AUC
# 0.53-0.88, some still under the former bound 1e4 and so unreported.
DIVERGENCE_THRESHOLD = 50.0

# The hyper-parameters ``qsg_jax.fit`` and the estimators take, by keyword name.
HYPERPARAMS = dict(sigma=SIGMA, lam=LAM, gamma=GAMMA, step_size=STEP_SIZE, num_steps=NUM_STEPS,
                   num_frequencies=NUM_FREQUENCIES, unlabeled_batch_size=UNLABELED_BATCH_SIZE,
                   labeled_batch_size=LABELED_BATCH_SIZE, loss=LOSS)

# The default step (``step_size="auto"``): eta0 = min(STEP_SIZE_MAX, 1 / (lambda_max(K H) + lam)),
# half the stability limit of the squared-loss scores' one-step map
# f <- (1 - eta lam) f - eta K H f (K the Gaussian kernel, H the constant Hessian of the
# mini-batch risk in the scores; ``qsg_jax.engine.auto_step``). The cap is the former default eta0 = 3
# (it binds on sgemm, ijcnn1 and cod-rna at small sigma); on skin at sigma = 1, lam = 1e-3, where
# eta0 = 3 diverged in 10 of 10 trials, the rule gives eta0 = 0.66-0.90 and none diverges
# (experiments/select_step.py).
STEP_SIZE_MAX = 3.0
