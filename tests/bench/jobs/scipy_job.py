"""scipy_job.py — a sparse matrix built as scipy users build one: an edge
list of NNZ random (row, col) pairs over N nodes (int64 numpy arrays, as an
edge file parses into), a COO matrix over it converted to CSR (which sums
the duplicates), then PageRank-style power iterations (CSR matrix times a
vector) (jobs.sh runs it; jobphase.py times it).

Phases: edges, coo, tocsr; then what PageRank needs, timed apart so its
arrays can be told apart: scale (out-degrees, P = D^-1 A: a new CSR matrix
written in order), transpose (P.T.tocsr(): a scatter into new indices and
data arrays), iterate (ITERS products PT @ r, each reading PT's arrays in
order; with r float64 and PT float32, scipy converts PT's data to a new
float64 array of NNZ at every product). Until 2026-12-02 the last three
were one phase, pagerank.

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

with phase("scipy", "scale"):
    out_degree = np.asarray(A.sum(axis=1)).ravel()
    out_degree[out_degree == 0] = 1
    P = sp.diags(1 / out_degree) @ A

with phase("scipy", "transpose"):
    PT = P.T.tocsr()

with phase("scipy", "iterate"):
    r = np.full(nodes, 1 / nodes)
    for _ in range(iters):
        r = 0.15 / nodes + 0.85 * (PT @ r)

result("scipy", f"{A.nnz}/{r.max():.6e}/{int(r.argmax())}")
