#!/usr/bin/env python3
"""Prints "PASSED FAILED" for the JUnit XML files given (node --test's junit reporter, pytest's --junitxml):
scripts/test.sh totals every runner from the runner's own machine-readable report instead of reading its printed lines.
A test case is failed when it carries a <failure> or an <error>, skipped when it carries <skipped>, passed otherwise;
node's tests that have subtests are <testsuite> elements, so only the leaves (<testcase>) are counted, as pytest reports
them. A file that is missing or cut short (the runner crashed) counts as one failure."""

import sys
import xml.etree.ElementTree as ET


def totals(path: str) -> tuple[int, int]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return 0, 1
    passed = failed = 0
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is None:
            passed += 1
    return passed, failed


if __name__ == "__main__":
    p = f = 0
    for file in sys.argv[1:]:
        a, b = totals(file)
        p, f = p + a, f + b
    print(p, f)
