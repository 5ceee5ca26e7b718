"""The plugin packages of `scripts/package`, installed the way a user installs them (the wheel
into a fresh venv, the npm tarball into a fresh folder, both outside the repository, their
dependencies from the registries), then each README's first example run there, twice: the
second process reads what the first wrote.

Needs `./scripts/package` to have run (CI runs it first).
"""

import json
import pathlib
import re
import subprocess
import sys
import zipfile

from test_installs import ROOT, TOOLS, VERSION, artifact, run


def first_block(readme, language):
    """The first fenced block of `language` in a README."""
    found = re.search(rf"```{language}\n(.*?)```", readme.read_text(), re.S)
    assert found, f"no {language} block in {readme}"
    return found.group(1)


def test_the_wheel_carries_the_component_the_server_carries(tmp_path):
    wheel = artifact("scratchpad_tools-*.whl")
    assert wheel.name == f"scratchpad_tools-{VERSION}-py3-none-any.whl", wheel.name
    served = tmp_path / "served.wasm"
    run(ROOT / "target" / "release" / "scratchpad-mcp", "component", "--standalone", "--out", served)
    with zipfile.ZipFile(wheel) as z:
        assert z.read("scratchpad_tools/scratchpad.wasm") == served.read_bytes()
        metadata = z.read(f"scratchpad_tools-{VERSION}.dist-info/METADATA").decode()
    assert re.search(r"^Requires-Dist: wasmtime<51,>=50", metadata, re.M), metadata


def test_the_wheel_installs_and_its_readme_example_runs_and_persists(tmp_path):
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    run(venv / "bin" / "pip", "install", "--quiet", "--disable-pip-version-check", artifact("scratchpad_tools-*.whl"))
    work = tmp_path / "work"
    work.mkdir()
    example = first_block(ROOT / "plugin" / "python" / "README.md", "python")
    (work / "example.py").write_text(example + "\nprint(planner.call('read_file', {'path': 'plan.md'})['content'], end='')\n")
    assert run(venv / "bin" / "python", "example.py", cwd=work) == "1. read the spec\n"
    check = ("from scratchpad_tools import Scratchpad\n"
             "import json\npad = Scratchpad('data')\n"
             "print(json.dumps([[t['name'] for t in pad.tools()], pad.call('file_history', {'agent_id': 'planner', 'path': 'plan.md'})]))\n")
    names, history = json.loads(run(venv / "bin" / "python", "-c", check, cwd=work))
    assert names == TOOLS
    assert [v["version"] for v in history["versions"]] == [1], history
    assert (work / "data" / "scratchpad.db").is_file()
    status = subprocess.run([str(ROOT / "target" / "release" / "scratchpad-mcp"), "--db", str(work / "data" / "scratchpad.db"), "verify"],
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stdout + status.stderr


def test_the_npm_package_installs_and_its_readme_example_runs_and_persists(tmp_path):
    tarball = artifact("scratchpad-tools-*.tgz")
    assert tarball.name == f"scratchpad-tools-{VERSION}.tgz", tarball.name
    work = tmp_path / "app"
    work.mkdir()
    (work / "package.json").write_text(json.dumps({"name": "app", "private": True, "type": "module"}))
    run("npm", "install", "--no-audit", "--no-fund", "--silent", tarball, cwd=work)
    example = first_block(ROOT / "plugin" / "npm" / "README.md", "js")
    (work / "example.mjs").write_text(example)
    assert "content: '1. read the spec\\n'" in run("node", "example.mjs", cwd=work)
    check = ("import { Scratchpad } from 'scratchpad-tools';\n"
             "const pad = new Scratchpad('data');\n"
             "console.log(JSON.stringify([pad.tools().map((t) => t.name), await pad.call('file_history', { agent_id: 'planner', path: 'plan.md' })]));\n"
             "await pad.close();\n")
    (work / "check.mjs").write_text(check)
    names, history = json.loads(run("node", "check.mjs", cwd=work))
    assert names == TOOLS
    assert [v["version"] for v in history["versions"]] == [1], history
    installed = json.loads((work / "node_modules" / "scratchpad-tools" / "package.json").read_text())
    assert installed["version"] == VERSION
    assert (work / "node_modules" / "scratchpad-tools" / "gen" / "scratchpad.js").is_file()
    assert not (work / "node_modules" / "scratchpad-tools" / "test").exists(), "tests are not shipped"
