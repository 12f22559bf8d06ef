"""records.py — the record lines the bench scripts write (jobs.sh, live_phases.sh):
a KIND word, then NAME=VALUE fields. Shared by jobs_report.py and live_report.py.
"""


def fields(line):
    """The NAME=VALUE fields of a record line, after its KIND word."""
    out = {}
    for tok in line.split()[1:]:
        k, _, v = tok.partition("=")
        out[k] = v
    return out
