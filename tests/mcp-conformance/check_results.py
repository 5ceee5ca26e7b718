"""Reads the conformance suite's results and checks what its own verdicts cannot:

- every scenario in expected-failures.yaml failed for the reason given in reasons.json (a
  piece of text its failing check must show), so no expected failure hides another bug;
- every scenario named in reasons.json is an expected failure, and the other way round;
- an inconclusive scenario (one the suite ends with a warning) warns for the reason given;
- the scenarios that pass did real work: resources-list listed the fixtures the run seeded.

    python3 check_results.py RESULTS_DIR REASONS_JSON EXPECTED_FAILURES_YAML
"""

import json
import pathlib
import re
import sys


def checks_by_scenario(results):
    """{scenario: [checks]} from the suite's RESULTS/server-<scenario>-<time>/checks.json."""
    found = {}
    for checks in pathlib.Path(results).glob("server-*/checks.json"):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", checks.parent.name)
        found[scenario] = json.loads(checks.read_text())
    return found


def expected_failures(yaml_file):
    """The scenario names listed under `server:` (the file is a plain list)."""
    return [line.strip()[2:].strip() for line in pathlib.Path(yaml_file).read_text().splitlines()
            if line.strip().startswith("- ")]


def main(results, reasons_file, yaml_file):
    reasons = json.loads(pathlib.Path(reasons_file).read_text())
    expected = expected_failures(yaml_file)
    found = checks_by_scenario(results)
    problems = []
    explained = {*reasons["failures"], *reasons["inconclusive"]}
    if set(expected) != explained:
        problems.append(f"expected-failures.yaml and reasons.json list different scenarios: "
                        f"{sorted(set(expected) ^ explained)}")
    for scenario, shows in reasons["failures"].items():
        checks = found.get(scenario)
        if checks is None:
            problems.append(f"{scenario}: no results")
            continue
        said = [c.get("errorMessage") or "" for c in checks if c.get("status") == "FAILURE"]
        if not any(shows in message for message in said):
            problems.append(f"{scenario}: expected to fail showing {shows!r}, its failures said {said}")
    for scenario, shows in reasons["inconclusive"].items():
        checks = found.get(scenario, [])
        warned = [json.dumps(c.get("details")) for c in checks if c.get("status") == "WARNING"]
        if not any(shows in w for w in warned) or len(warned) != len(checks):
            problems.append(f"{scenario}: expected only a warning showing {shows!r}, got {checks}")
    for scenario, want in reasons["passing"].items():
        checks = found.get(scenario, [])
        if not checks or any(c.get("status") != "SUCCESS" for c in checks):
            problems.append(f"{scenario}: expected to pass, got {checks}")
            continue
        details = checks[0].get("details") or {}
        for key, value in want.items():
            if details.get(key) != value:
                problems.append(f"{scenario}: {key} is {details.get(key)!r}, not {value!r}")
    for problem in problems:
        print(f"conformance check: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"conformance check: {len(reasons['failures'])} expected failures fail and "
          f"{len(reasons['inconclusive'])} warn for their stated reasons; "
          f"{len(reasons['passing'])} passing scenarios saw the fixtures")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
