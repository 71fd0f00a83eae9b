#!/usr/bin/env python3
"""Counts the test cases of a `bazel test` run from each target's JUnit XML.

  tally_bazel_tests.py LOG EXPECTED_TARGETS_FILE

Prints one line "PASSED FAILED SKIPPED" on stdout and the reasons on stderr:
- a target in EXPECTED_TARGETS_FILE that never reported a status counts as one failure;
- a target that did not pass counts as one failure (its cases are not trusted);
- a passing target's cases count one by one: failures and errors fail, skipped (GTEST_SKIP)
  and disabled (DISABLED_, reported "notrun"/"suppressed") cases count as skipped, never passed;
- a passing target whose XML has no test case counts as one pass (a test without cases, e.g. a
  shell test whose exit status is its verdict).
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

STATUS_RE = re.compile(
    r'^(//\S+)\s+(?:\(cached\)\s+)?(PASSED|FAILED|TIMEOUT|FLAKY|FAILED TO BUILD|NO STATUS|'
    r'INCOMPLETE|REMOTE FAILURE|SKIPPED)\b', re.M)


def case_counts(xml_path):
    passed = failed = skipped = 0
    root = ET.parse(xml_path).getroot()
    for tc in root.iter('testcase'):
        if tc.find('failure') is not None or tc.find('error') is not None:
            failed += 1
        elif (tc.find('skipped') is not None or tc.get('status') == 'notrun'
              or tc.get('result') in ('skipped', 'suppressed')):
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main():
    log = open(sys.argv[1], errors='replace').read()
    expected = [l.strip() for l in open(sys.argv[2]) if l.strip().startswith('//')]
    statuses = {}
    for target, status in STATUS_RE.findall(log):
        statuses[target] = status
    p = f = s = 0
    for target in expected:
        status = statuses.get(target)
        if status is None:
            print(f'tally: {target} reported no status', file=sys.stderr)
            f += 1
            continue
        if status != 'PASSED':
            print(f'tally: {target} {status}', file=sys.stderr)
            f += 1
            continue
        path = os.path.join('bazel-testlogs', target[2:].replace(':', '/'), 'test.xml')
        try:
            cp, cf, cs = case_counts(path)
        except (OSError, ET.ParseError) as e:
            print(f'tally: {target} passed but its test.xml is unreadable: {e}', file=sys.stderr)
            f += 1
            continue
        if cp + cf + cs == 0:
            cp = 1
        if cf:
            print(f'tally: {target} passed with {cf} failing case(s) in its XML', file=sys.stderr)
        if cs:
            print(f'tally: {target}: {cs} case(s) skipped or disabled', file=sys.stderr)
        p, f, s = p + cp, f + cf, s + cs
    for target in sorted(set(statuses) - set(expected)):
        print(f'tally: {target} reported but not in the expected list', file=sys.stderr)
    print(p, f, s)


if __name__ == '__main__':
    main()
