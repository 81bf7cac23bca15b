"""Studies: batches of real calls described by a study file (studies/schema.json, docs/studies.md). `spec` reads and
checks the file and expands its points, `plan` orders points x repetitions (the plan, apart from the runner),
`runner` runs them serially as ordinary run directories (resumable, interruptible), `state` reads what a study
directory holds, `aggregate` writes study.parquet and study.json, `tdist` gives Student's t quantile.

    python -m rtclab.study run FILE [--out DIR] [--dry-run] [--quick FACTOR]
    python -m rtclab.study aggregate OUT
"""
