#!/bin/sh
# Regenerates the Python code of the event log's format descriptions (*_pb2.py and their type stubs *_pb2.pyi) with
# grpcio-tools' protoc (a test dependency, pinned in requirements.lock). The generated files are committed, so that
# the analyzer needs only the protobuf runtime; analysis/test/test_eventlog_format.py checks they are up to date.
set -e
cd "$(dirname "$0")"
PY="${PYTHON:-../../../.venv/bin/python}"
"$PY" -m grpc_tools.protoc -I. --python_out=. --pyi_out=. rtc_event_log2.proto rtc_event_log.proto
