"""pywork.py — an allocation-heavy CPython workload for spillway's suite.

Builds and discards many small objects the way ordinary Python code does:
dicts of tuples and strings, list comprehensions, JSON round trips, string
joins and sorting. Scale with the first argument (default 1).
"""
import json
import sys


def main(scale: int) -> int:
    total = 0
    for rnd in range(scale):
        records = [{"id": i, "name": f"item-{i}-{rnd}", "tags": [str(i % 7), str(i % 11)],
                    "pos": (i * 0.5, i * 0.25)} for i in range(60000)]
        index = {}
        for r in records:
            index.setdefault(r["tags"][0], []).append(r["name"])
        text = json.dumps(records[:20000])
        back = json.loads(text)
        total += len(back) + sum(len(v) for v in index.values())
        words = " ".join(r["name"] for r in records).split()
        words.sort(key=lambda w: (len(w), w[::-1]))
        total += len(set(words))
        del records, index, text, back, words
    print(total)
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
