"""What leaves rtclab for other tools (docs/export.md): tidy long tables of a run's or a study's metrics for R and
pandas (tidy.py: CSV, Parquet) and a run's time series as a Flent data file (flent.py). Every number is read from
what the analyzer already wrote (metrics.json, packets.parquet, study.parquet); nothing is measured again."""
