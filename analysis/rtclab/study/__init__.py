"""The analysis of studies (docs/studies.md): what a study directory holds and what its runs measured. `studydir`
reads a study directory (every attempt of every repetition, classified from its run directory's manifest and
metrics.json), `aggregate` writes study.parquet and study.json, `report` prints tables per phase, point and flow,
`dashboard` writes OUT/dashboard.html, `compare` sets two studies side by side, `tdist` gives Student's t quantile.

Running a study is not here: the orchestrator is the package rtclab_study beside this one (analysis/rtclab_study/:
the study file, the plan, the runner and its executors, which start Node and Ray). Dependencies go one way: the
orchestrator imports this package, never the reverse, so the analyzer only reads directories. What the two share is
files, not code: the analysis reads OUT/plan.json (the orchestrator's record of the expanded study, never the study
file itself), OUT/attempts.jsonl and the run directories.

    rtclab study aggregate OUT | report OUT | compare A B      (the orchestrator's CLI, calling the functions here)
"""
