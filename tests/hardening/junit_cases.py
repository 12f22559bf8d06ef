"""junit_cases.py XML — one line per test case of a junit XML file (pytest's,
CPython's regrtest's): "STATE classname.name", STATE pass, fail or skip; a
file that cannot be read is one failing case, "fail <no junit xml: why>".
Used by pysuite.sh and cpython.sh to compare runs case by case."""
import sys
import xml.etree.ElementTree as ET

try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception as e:
    print(f"fail <no junit xml: {e}>")
    sys.exit()
for tc in root.iter('testcase'):
    state = 'pass'
    if tc.find('failure') is not None or tc.find('error') is not None:
        state = 'fail'
    elif tc.find('skipped') is not None:
        state = 'skip'
    print(f"{state} {tc.get('classname')}.{tc.get('name')}")
