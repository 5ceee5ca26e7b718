"""Each artifact of `scripts/package`, installed the way a user installs it, into a fresh place
outside the repository, then driven by the official MCP Python SDK through a real session:
initialize, tools/list, write_file, read_file since a version.

Needs `./scripts/package` to have run (CI runs it first); the artifacts are read from
target/packages. Run with `python -m pytest tests/packaging` in a venv with the MCP SDK and
`tests/packaging/requirements.txt` (uv, for uvx).
"""

import asyncio
import hashlib
import json
import os
import pathlib
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tomllib
import zipfile

import pytest
from mcp import Client, StdioServerParameters

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ROOT / "target" / "packages"
VERSION = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"]
NAME = "io.github.scratchpad-mcp/scratchpad-mcp"
TOOLS = ["write_file", "edit_file", "read_file", "read_files", "file_history", "search", "append_log",
         "read_log", "forget_log", "list_files", "delete_file", "summarize_file", "get_usage_stats"]


def artifact(pattern):
    found = sorted(PACKAGES.glob(pattern))
    if not found:
        pytest.fail(f"no {pattern} in target/packages: run ./scripts/package first")
    return found[-1]


def run(*args, **kwargs):
    done = subprocess.run(list(map(str, args)), capture_output=True, text=True, timeout=600, **kwargs)
    assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"
    return done.stdout


def clean_env(home, **more):
    """What a desktop client passes a server: a PATH and a HOME of the user's, nothing of ours."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), **more}


def session(command, args, env, cwd=None):
    """A real MCP session through the installed command: the tools are listed, a file is
    written twice and read back as a diff since its first version."""
    server = StdioServerParameters(command=str(command), args=list(map(str, args)), env=env, cwd=cwd)

    async def go():
        async with Client(server) as c:
            assert c.server_info.name == "scratchpad-mcp" and c.server_info.version == VERSION
            listed = sorted(t.name for t in (await c.list_tools()).tools)
            assert listed == sorted(TOOLS), listed
            old = "".join(f"line {i}\n" for i in range(1, 41))
            new = old.replace("line 20\n", "line twenty\n")
            for content in (old, new):
                wrote = await c.call_tool("write_file", {"agent_id": "a", "path": "notes.md", "content": content})
                assert not wrote.is_error, wrote.content
            read = await c.call_tool("read_file", {"agent_id": "a", "path": "notes.md", "since_version": 1})
            assert not read.is_error, read.content
            diff = read.structured_content
            assert diff["current_version"] == 2 and diff["since_version"] == 1
            assert {"op": "add", "lines": ["line twenty"]} in diff["diff"], diff

    asyncio.run(go())


def test_cargo_install_from_the_source_tree(tmp_path):
    """`cargo install --locked --path host` gives a working `scratchpad-mcp` (built in the
    workspace's target folder, so CI relinks nothing it built already)."""
    root = tmp_path / "cargo-root"
    # From the clone, as the README says: its rust-toolchain.toml picks the compiler.
    run("cargo", "install", "--locked", "--path", "host", "--root", root,
        "--target-dir", ROOT / "target", cwd=ROOT)
    binary = root / "bin" / "scratchpad-mcp"
    session(binary, ["--db", tmp_path / "store.db"], clean_env(tmp_path))


def test_every_package_carries_the_license():
    """Apache-2.0 asks that a copy of the license go with the work: each artifact holds the
    repository's LICENSE, byte for byte."""
    license_text = (ROOT / "LICENSE").read_bytes()
    assert license_text.lstrip().startswith(b"Apache License") and b"Version 2.0" in license_text
    zipped = {
        f"scratchpad_mcp-{VERSION}-*.whl": f"scratchpad_mcp-{VERSION}.dist-info/licenses/LICENSE",
        "scratchpad_tools-*-py3-none-any.whl": None,
        f"scratchpad-mcp-{VERSION}.mcpb": "LICENSE",
    }
    for pattern, member in zipped.items():
        path = artifact(pattern)
        with zipfile.ZipFile(path) as z:
            if member is None:
                names = [n for n in z.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
                assert len(names) == 1, (path.name, z.namelist())
                member = names[0]
            assert z.read(member) == license_text, path.name
    for pattern in [f"scratchpad-mcp-{VERSION}.tgz", f"scratchpad-mcp-linux-x64-{VERSION}.tgz",
                    "scratchpad-tools-*.tgz"]:
        path = artifact(pattern)
        with tarfile.open(path) as tar:
            assert tar.extractfile("package/LICENSE").read() == license_text, path.name


def test_crate_metadata_is_complete():
    """What `cargo package` and crates.io want of a crate, on the one users install."""
    metadata = json.loads(run("cargo", "metadata", "--no-deps", "--format-version", "1", cwd=ROOT))
    host = next(p for p in metadata["packages"] if p["name"] == "scratchpad-mcp")
    for field in ["description", "license", "repository", "homepage", "readme"]:
        assert host[field], field
    assert 1 <= len(host["keywords"]) <= 5 and host["categories"], host
    assert pathlib.Path(host["manifest_path"]).parent.joinpath(host["readme"]).is_file()
    # `cargo package` takes what is in the crate's folder: the license is linked there.
    license_text = pathlib.Path(host["manifest_path"]).parent.joinpath("LICENSE").read_bytes()
    assert license_text == (ROOT / "LICENSE").read_bytes()


def test_the_wheel_in_a_fresh_venv(tmp_path):
    wheel = artifact(f"scratchpad_mcp-{VERSION}-*.whl")
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(f"scratchpad_mcp-{VERSION}.dist-info/METADATA").decode()
    assert f"mcp-name: {NAME}" in meta, "the registry reads the package's README for its name"
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    run(venv / "bin" / "pip", "install", "--quiet", "--no-index", wheel)
    binary = venv / "bin" / "scratchpad-mcp"
    assert run(binary, "--version").strip() == f"scratchpad-mcp {VERSION}"
    session(binary, ["--db", tmp_path / "store.db"], clean_env(tmp_path))


def test_the_wheel_through_uvx(tmp_path):
    """As a client config runs it: `uvx --from WHEEL scratchpad-mcp` (offline: the wheel needs
    nothing else)."""
    wheel = artifact(f"scratchpad_mcp-{VERSION}-*.whl")
    uvx = pathlib.Path(sys.executable).parent / "uvx"
    env = clean_env(tmp_path, UV_CACHE_DIR=str(tmp_path / "uv-cache"))
    args = ["--offline", "--from", wheel, "scratchpad-mcp", "--db", tmp_path / "store.db"]
    session(uvx, args, env)


def test_the_npm_packages_in_a_fresh_folder_through_npx(tmp_path):
    launcher = artifact(f"scratchpad-mcp-{VERSION}.tgz")
    platform = artifact(f"scratchpad-mcp-linux-x64-{VERSION}.tgz")
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text('{"name": "uses-scratchpad", "private": true}\n')
    run("npm", "install", "--no-audit", "--no-fund", "--silent", platform, launcher, cwd=project)
    installed = json.loads((project / "node_modules" / "scratchpad-mcp" / "package.json").read_text())
    assert installed["version"] == VERSION and installed["mcpName"] == NAME
    assert set(installed["optionalDependencies"]) >= {"@scratchpad-mcp/linux-x64", "@scratchpad-mcp/darwin-arm64",
                                                       "@scratchpad-mcp/win32-x64"}
    # As a client config runs it: npx, from the folder it is installed in.
    npx = shutil.which("npx")
    assert run(npx, "--no-install", "scratchpad-mcp", "--version", cwd=project).strip() == f"scratchpad-mcp {VERSION}"
    env = clean_env(tmp_path, npm_config_cache=str(tmp_path / "npm-cache"))
    session(npx, ["--no-install", "scratchpad-mcp", "--db", tmp_path / "store.db"], env, cwd=project)
    # The launcher passes the exit status through.
    failed = subprocess.run([npx, "--no-install", "scratchpad-mcp", "completions", "nope"], cwd=project,
                            capture_output=True, text=True, timeout=120)
    assert failed.returncode == 2 and "invalid value 'nope'" in failed.stderr, failed.stderr


def test_the_bundle_as_claude_desktop_starts_it(tmp_path):
    """The .mcpb unpacked (modes kept, as the app does), its manifest's command started with
    the user's settings put in for the variables."""
    bundle = artifact(f"scratchpad-mcp-{VERSION}.mcpb")
    unpacked = tmp_path / "extension"
    with zipfile.ZipFile(bundle) as z:
        for info in z.infolist():
            path = pathlib.Path(z.extract(info, unpacked))
            mode = info.external_attr >> 16
            if mode & stat.S_IXUSR:
                path.chmod(mode & 0o777)
    manifest = json.loads((unpacked / "manifest.json").read_text())
    assert manifest["version"] == VERSION and manifest["server"]["type"] == "binary"
    assert sorted(t["name"] for t in manifest["tools"]) == sorted(TOOLS)
    assert manifest["user_config"]["anthropic_api_key"]["sensitive"] is True
    settings = {"__dirname": str(unpacked), "user_config.store_folder": str(tmp_path / "my store"),
                "user_config.anthropic_api_key": ""}

    def fill(text):
        return re.sub(r"\$\{([^}]+)\}", lambda m: settings[m.group(1)], text)

    config = manifest["server"]["mcp_config"]
    env = clean_env(tmp_path, **{k: fill(v) for k, v in config["env"].items()})
    session(fill(config["command"]), [fill(a) for a in config["args"]], env)
    assert (tmp_path / "my store" / "scratchpad.db").is_file(), "the store is in the folder the user chose"


def test_server_json_has_what_the_registry_requires():
    for path in [ROOT / "server.json", PACKAGES / "server.json"]:
        server = json.loads(path.read_text())
        assert server["$schema"].startswith("https://static.modelcontextprotocol.io/schemas/")
        assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", server["name"]) and server["name"] == NAME
        assert 1 <= len(server["description"]) <= 100
        assert server["version"] == VERSION
        for package in server["packages"]:
            for field in ["registryType", "identifier", "version", "transport"]:
                assert package.get(field), (path.name, package, field)
            assert package["version"] == VERSION and package["transport"] == {"type": "stdio"}
        for remote in server["remotes"]:
            assert remote["type"] == "streamable-http" and remote["url"].startswith("https://")
    packaged = json.loads((PACKAGES / "server.json").read_text())
    kinds = {p["registryType"]: p for p in packaged["packages"]}
    assert set(kinds) == {"npm", "pypi", "mcpb"}
    bundle = artifact(f"scratchpad-mcp-{VERSION}.mcpb")
    assert kinds["mcpb"]["fileSha256"] == hashlib.sha256(bundle.read_bytes()).hexdigest()
    assert kinds["mcpb"]["identifier"].endswith(f"/v{VERSION}/{bundle.name}")


def test_man_page_and_completions_come_from_the_cli():
    man = (PACKAGES / "scratchpad-mcp.1").read_text()
    assert man.startswith(".ie") and ".TH scratchpad-mcp 1" in man and "snapshot" in man
    for shell, marker in [("bash", "complete -F"), ("zsh", "#compdef scratchpad-mcp"), ("fish", "complete -c scratchpad-mcp")]:
        script = (PACKAGES / "completions" / f"scratchpad-mcp.{shell}").read_text()
        assert marker in script and "verify" in script, shell
