"""xgboost_job.py — gradient boosting as XGBoost users write it: a dense
float32 matrix of ROWS x 64 features (numpy), a DMatrix over it (XGBoost
copies it into its own C++ pages), ROUNDS rounds of `hist` boosting, then a
prediction over the training matrix (jobs.sh runs it; jobphase.py times it).

Usage: xgboost_job.py [ROWS_M] [ROUNDS]   (default 1 and 8; issue 26 used 3 and 20)
"""
import sys

import numpy as np
import xgboost as xgb

from jobphase import phase, result

rows = int(float(sys.argv[1]) * 1e6) if len(sys.argv) > 1 else 1_000_000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 8
features = 64
rng = np.random.default_rng(7)

with phase("xgboost", "data"):
    X = rng.standard_normal((rows, features), dtype=np.float32)
    w = rng.standard_normal(features).astype(np.float32)
    y = ((X @ w + 0.5 * rng.standard_normal(rows, dtype=np.float32)) > 0).astype(np.float32)

with phase("xgboost", "dmatrix"):
    dtrain = xgb.DMatrix(X, label=y)

with phase("xgboost", "train"):
    params = {"tree_method": "hist", "objective": "binary:logistic", "max_depth": 6,
              "eta": 0.3, "max_bin": 256, "eval_metric": "logloss"}
    booster = xgb.train(params, dtrain, num_boost_round=rounds)

with phase("xgboost", "predict"):
    p = booster.predict(dtrain)

result("xgboost", f"{float(np.mean((p > 0.5) == y)):.6f}/{float(p[:1000].sum()):.4f}")
