"""sklearn_job.py — scikit-learn on a dense matrix as its users write it:
ROWS x 64 float64 samples around 8 overlapping centres are standardised
(StandardScaler), reduced with PCA, and clustered with k-means on the
standardised matrix (jobs.sh runs it; jobphase.py times it).

Usage: sklearn_job.py [ROWS_M]   (default 0.6)
"""
import sys

import numpy as np
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

from jobphase import phase, result

rows = int(float(sys.argv[1]) * 1e6) if len(sys.argv) > 1 else 600_000
features, centres = 64, 8
rng = np.random.default_rng(3)

with phase("sklearn", "data"):
    means = rng.standard_normal((centres, features)) * 0.8
    X = rng.standard_normal((rows, features))
    X += means[rng.integers(0, centres, rows)]

with phase("sklearn", "scale"):
    Xs = StandardScaler().fit_transform(X)

with phase("sklearn", "pca"):
    pca = PCA(n_components=8, random_state=0)
    Z = pca.fit_transform(Xs)

with phase("sklearn", "kmeans"):
    km = KMeans(n_clusters=centres, n_init=1, max_iter=20, tol=0, random_state=0).fit(Xs)

result("sklearn", f"{pca.explained_variance_ratio_.sum():.6f}/{km.inertia_:.6e}/{km.n_iter_}")
