"""``qsg_jax.fit`` on an SGEMM slice against values recorded before the 2026-11-26 renovation.

The renovation (one DSG step, one config, one cross-validation) promised unchanged behaviour. The
values below were printed by the engine at commit 83a19bc on one x86 machine; XLA's CPU code
depends on the host's instruction set, so they are compared with a tolerance (float32 rounding
over 128 steps), never bit for bit.
"""

import numpy as np
import pytest

import qsg_jax
from qsg_jax import data

COEF = [[-0.011204874143004417, 0.024305127561092377, -0.0015559792518615723, -0.1950845718383789],
        [0.03584370017051697, 0.013900317251682281, -0.009228602051734924, -0.04063405841588974],
        [0.051023438572883606, -0.030371863394975662, -0.006913882680237293, -0.006227282341569662]]
SCALE = 0.7219403386116028
THRESHOLDS = [-1.5087568759918213, -1.3551990985870361, -1.1056454181671143, -0.8448551893234253]
SCORES = [-1.5939496755599976, -0.8787329196929932, -1.002205729484558, -1.3562803268432617,
          -1.5525599718093872, -1.892730474472046, -1.809375524520874, -1.1313636302947998,
          -0.8450220823287964, -1.1842156648635864, -0.9011449217796326, -0.5425806641578674,
          -1.2295458316802979, -0.86618971824646, -1.474997639656067, -1.1637979745864868]


def test_dsg_fit_on_sgemm_matches_the_pre_renovation_engine(shared_data_dir):
  ds = data.load("sgemm", data_dir=shared_data_dir)
  idx = np.random.default_rng(0).choice(ds.x.shape[0], 3000, replace=False)
  x, y = ds.x[idx], data.discretize_equal_frequency(ds.y[idx], 5)[0]
  x = data.minmax_apply(x, *data.minmax_fit(x))
  split = data.split_semisupervised(0, y, num_labeled=300)
  x_l, y_l, x_u = x[split.labeled], y[split.labeled], x[split.unlabeled][:2000]
  result = qsg_jax.fit(x_l, y_l, x_u, key=0, num_steps=128, solver="dsg")
  coef = np.asarray(result.model.coef) * float(result.model.scale)
  np.testing.assert_allclose(coef[[0, 5, 127], :4], np.asarray(COEF) * SCALE, rtol=2e-4,
                             atol=2e-6)
  np.testing.assert_allclose(result.thresholds, THRESHOLDS, rtol=2e-4, atol=2e-5)
  np.testing.assert_allclose(qsg_jax.decision_function(result, x[:16]), SCORES, rtol=2e-4,
                             atol=2e-5)
  assert float(result.metrics["eta"][0]) == pytest.approx(3.0)
