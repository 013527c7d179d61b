"""What the experiment scripts share; every module at the top of ``experiments/`` is a script.

  cli          settings dataclasses -> flags, quiet logging, the compilation cache, short errors
  store        a run's results directory: manifest, finished cells, --resume / --overwrite
  reporting    atomic files, markdown / CSV / JSON reports, environment, figures, progress bar
  protocols    the papers' protocols and the named random streams of a trial
  methods      the compared methods (QSG, the exact baselines): grids, CV, one fit, statistics
  roc_svm      the ROC-SVM paper's tables as printed, and one timed ROC-SVM trial
"""
