"""scipy_job.py — a sparse matrix built as scipy users build one: an edge
list of NNZ random (row, col) pairs over N nodes (int64 numpy arrays, as an
edge file parses into), a COO matrix over it converted to CSR (which sums
the duplicates), then PageRank-style power iterations (CSR matrix times a
vector) (jobs.sh runs it; jobphase.py times it).

Usage: scipy_job.py [NNZ_M] [NODES_M] [ITERS]   (default 30, 6, 3)
"""
import sys

import numpy as np
import scipy.sparse as sp

from jobphase import phase, result

nnz = int(float(sys.argv[1]) * 1e6) if len(sys.argv) > 1 else 30_000_000
nodes = int(float(sys.argv[2]) * 1e6) if len(sys.argv) > 2 else 6_000_000
iters = int(sys.argv[3]) if len(sys.argv) > 3 else 3
rng = np.random.default_rng(11)

with phase("scipy", "edges"):
    src = rng.integers(0, nodes, nnz)
    dst = rng.integers(0, nodes, nnz)
    weight = np.ones(nnz, dtype=np.float32)

with phase("scipy", "coo"):
    coo = sp.coo_matrix((weight, (src, dst)), shape=(nodes, nodes))

with phase("scipy", "tocsr"):
    A = coo.tocsr()

with phase("scipy", "pagerank"):
    out_degree = np.asarray(A.sum(axis=1)).ravel()
    out_degree[out_degree == 0] = 1
    P = sp.diags(1 / out_degree) @ A
    PT = P.T.tocsr()
    r = np.full(nodes, 1 / nodes)
    for _ in range(iters):
        r = 0.15 / nodes + 0.85 * (PT @ r)

result("scipy", f"{A.nnz}/{r.max():.6e}/{int(r.argmax())}")
