"""rtclab analyzer: reads a run directory, joins its two captures packet by packet, computes the metrics of
docs/metrics.md, and writes metrics.json, report.txt, packets.parquet and dashboard.html."""

__version__ = "0.1.0"
