"""pandas_job.py — a dataframe job as pandas users write it: a fact table of
ROWS sales over KEYS customers is joined to the customers' dimension table,
grouped by customer and by (region, day), and sorted by revenue (jobs.sh runs
it; its phases are timed by jobphase.py, the pandas code is plain).

Usage: pandas_job.py [ROWS_M] [KEYS_M]   (millions; default 10 and 1.5)
At 8M rows every column is 61 MiB, under the shim's default 64 MiB
threshold: all of it is mimalloc's anonymous memory (an OOM kill under a
limit, measured); at 10M rows the int64/float64 columns are 76 MiB.
"""
import sys

import numpy as np
import pandas as pd

from jobphase import phase, result

rows = int(float(sys.argv[1]) * 1e6) if len(sys.argv) > 1 else 10_000_000
keys = int(float(sys.argv[2]) * 1e6) if len(sys.argv) > 2 else 1_500_000
rng = np.random.default_rng(42)

with phase("pandas", "build"):
    sales = pd.DataFrame({
        "customer_id": rng.integers(0, keys, rows),
        "day": rng.integers(0, 365, rows),
        "quantity": rng.integers(1, 20, rows),
        "price": rng.random(rows) * 100,
    })
    customers = pd.DataFrame({
        "customer_id": np.arange(keys),
        "region": rng.integers(0, 40, keys),
        "discount": rng.random(keys) * 0.3,
    })

with phase("pandas", "merge"):
    df = sales.merge(customers, on="customer_id", how="left")
    df["revenue"] = df["quantity"] * df["price"] * (1 - df["discount"])

with phase("pandas", "groupby"):
    per_customer = df.groupby("customer_id").agg(
        revenue=("revenue", "sum"), orders=("day", "count"), last_day=("day", "max"))
    per_region_day = df.groupby(["region", "day"])["revenue"].sum()

with phase("pandas", "sort"):
    ranked = df.sort_values("revenue", ascending=False)
    top = per_customer.sort_values("revenue", ascending=False).head(100)

result("pandas", f"{per_customer['revenue'].sum():.6e}/{per_region_day.max():.6e}/"
       f"{ranked['revenue'].iloc[0]:.6e}/{int(top.index[0])}")
