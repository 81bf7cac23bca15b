"""The study orchestrator (docs/studies.md): batches of real calls described by a study file (studies/schema.json).
`spec` reads and checks the file and expands its points (through `node scenarios/check-points.js`), `plan` orders
points x repetitions and writes OUT/plan.json (the plan, apart from the runner), `runner` runs them as ordinary run
directories (resumable, interruptible) through an executor: `executors` (serial, or N at once pinned to CPUs: `node
harness/cli.js` per run) or `ray_executor` (a Ray cluster).

It is a package of its own, beside the analyzer `rtclab`, because it sits upstream of the harness it drives, while
the analyzer only reads run and study directories. Dependencies go one way: this package imports `rtclab` (the
reading of a study directory and the classification of an attempt, `rtclab.study.studydir`, and the aggregation,
report and comparison of a study's results, `rtclab.study`); no module of `rtclab` imports this one, except the
console entry `rtclab study ...` (rtclab/cli.py), which dispatches here lazily. The study file is read only here: the
analysis reads the plan.json written from it.

    python -m rtclab_study run FILE [--out DIR] [--dry-run] [--quick FACTOR] [--parallel N | --ray ADDRESS]
    python -m rtclab_study aggregate OUT | report OUT | compare A B
"""
