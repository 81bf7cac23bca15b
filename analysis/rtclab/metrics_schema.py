"""metrics.json's schema (metrics.schema.json beside this file, JSON Schema draft 2020-12): the one list of its fields
and their types, which the analyzer's output is tested against (analysis/test/test_metrics_schema.py) and, with
RTCLAB_CHECK_METRICS=1, checked against every time `analyze` writes it. What the numbers mean is docs/metrics.md.

A document is checked by jsonschema-rs (compiled: a third of a millisecond for a call's metrics.json, where jsonschema
takes about 90, which made the check a tenth of the analyzer's tests' time); only a document it finds invalid is
walked again by jsonschema, whose best match names the field (the tests hold the two to the same verdicts).

    python -m rtclab.metrics_schema RUN/metrics.json...   # exit 1 naming the first invalid field of each file
"""

from __future__ import annotations

import json
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema_rs

SCHEMA_PATH = Path(__file__).with_name("metrics.schema.json")
CHECK_ENV = "RTCLAB_CHECK_METRICS"  # "1": analyze() validates metrics.json before writing it


class MetricsSchemaError(Exception):
    """metrics.json does not follow its schema; the message names the field."""


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
    return doc


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    # The schema itself is checked against the metaschema by test_metrics_schema, not here: that takes over a second,
    # in every process that validates (each analysis the tests start).
    return jsonschema.Draft202012Validator(schema())


@lru_cache(maxsize=1)
def _fast_validator() -> jsonschema_rs.Draft202012Validator:
    return jsonschema_rs.Draft202012Validator(schema())


def is_valid(doc: Any) -> bool:
    """Whether the document follows the schema (jsonschema-rs's verdict)."""
    return bool(_fast_validator().is_valid(doc))


def _field(path: Any) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".") or "(the document itself)"


def problems(doc: Any) -> list[str]:
    """Every violation, one sentence each naming the field (e.g. `flows[3].owd_ms.p50: 'x' is not of type ...`),
    deepest first."""
    if is_valid(doc):
        return []
    # An error under oneOf/anyOf (a section that may be null) is reported by its most relevant sub-error.
    errors = [jsonschema.exceptions.best_match([e]) or e for e in _validator().iter_errors(doc)]
    errors.sort(key=lambda e: (-len(e.absolute_path), e.message))
    return [f"metrics.json field {_field(e.absolute_path)}: {e.message}" for e in errors]


def validate(doc: Any) -> None:
    """Raises MetricsSchemaError naming the most relevant invalid field (jsonschema's best match)."""
    if is_valid(doc):
        return
    errors = list(_validator().iter_errors(doc))
    if not errors:  # the two validators disagree: say so, with jsonschema-rs's own reason
        first = next(iter(_fast_validator().iter_errors(doc)))
        raise MetricsSchemaError(f"metrics.json field {_field(first.instance_path)}: {first.message} (jsonschema-rs; "
                                 "jsonschema finds no error: a difference between the two validators)")
    best = jsonschema.exceptions.best_match(errors) or errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    raise MetricsSchemaError(f"metrics.json field {_field(best.absolute_path)}: {best.message}{more}")


def check_enabled() -> bool:
    """Whether analyze() validates what it writes (RTCLAB_CHECK_METRICS=1; the tests set it)."""
    return os.environ.get(CHECK_ENV) == "1"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m rtclab.metrics_schema METRICS_JSON...", file=sys.stderr)
        return 2
    status = 0
    for name in args:
        try:
            validate(json.loads(Path(name).read_text()))
        except (OSError, ValueError, MetricsSchemaError) as e:
            print(f"{name}: {e}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
