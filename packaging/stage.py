"""Lays out each package from its template here and the built binary, for scripts/package.

Everything a package says that the project already knows is taken from where it is known,
not copied: the version from the workspace's Cargo.toml, the tool list from the binary's own
`tools/list`, the platforms from npm/scratchpad-mcp/platforms.json, the bundle's hash from the
bundle, the LICENSE every package carries from the repository's.

    python3 stage.py npm BINARY PLATFORM OUT      the launcher package and PLATFORM's, in OUT
    python3 stage.py mcpb BINARY OUT              the bundle's folder (manifest and binary)
    python3 stage.py server-json MCPB OUT         server.json with the bundle as a package
    python3 stage.py version                      the version, for the shell
"""

import hashlib
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import tomllib

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
# The license every package carries beside what it ships.
LICENSE = ROOT / "LICENSE"
RELEASES = "https://github.com/scratchpad-mcp/scratchpad-mcp/releases/download"


def version():
    """The one version: the workspace package's."""
    return tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"]


def with_version(template):
    """The template with `version` set, right after `name`."""
    out = {}
    for key, value in template.items():
        out[key] = value
        if key == "name":
            out["version"] = version()
    return out


def read_json(path):
    return json.loads(pathlib.Path(path).read_text())


def write_json(path, value):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n")


def tools(binary):
    """The binary's tools as (name, first sentence of the description), from `tools/list`."""
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "stage", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            [str(binary), "--db", f"{scratch}/store.db", "--cache-dir", f"{scratch}/cache"],
            input="".join(json.dumps(r) + "\n" for r in requests),
            capture_output=True, text=True, timeout=120, check=True)
    listed = [json.loads(line) for line in done.stdout.splitlines() if line.strip()][-1]["result"]["tools"]
    return [{"name": t["name"], "description": t["description"].split(". ")[0].rstrip(".") + "."}
            for t in listed]


def executable(source, target):
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    target.chmod(0o755)


def stage_npm(binary, platform, out):
    """OUT/scratchpad-mcp (the launcher, depending on every platform's package) and
    OUT/PLATFORM (this platform's, with the binary)."""
    out = pathlib.Path(out)
    launcher = HERE / "npm" / "scratchpad-mcp"
    shutil.copytree(launcher, out / "scratchpad-mcp", dirs_exist_ok=True)
    platforms = read_json(launcher / "platforms.json")["platforms"]
    package = with_version(read_json(launcher / "package.json"))
    package["optionalDependencies"] = {f"@scratchpad-mcp/{p}": version() for p in platforms}
    write_json(out / "scratchpad-mcp" / "package.json", package)
    spec = platforms[platform]
    name = f"@scratchpad-mcp/{platform}"
    write_json(out / platform / "package.json", {
        "name": name,
        "version": version(),
        "description": f"The scratchpad-mcp binary for {platform}; install scratchpad-mcp instead.",
        "license": package["license"],
        "repository": package["repository"],
        "os": [spec["os"]],
        "cpu": [spec["cpu"]],
        "files": [f"bin/{spec['binary']}"],
        "preferUnplugged": True,
    })
    readme = (HERE / "npm" / "platform" / "README.md").read_text().replace("PLATFORM", platform)
    (out / platform / "README.md").write_text(readme)
    for package in ["scratchpad-mcp", platform]:
        shutil.copyfile(LICENSE, out / package / "LICENSE")
    executable(binary, out / platform / "bin" / spec["binary"])


def stage_mcpb(binary, out):
    """The bundle's folder: manifest.json (version and tools filled in) and the binary."""
    out = pathlib.Path(out)
    manifest = with_version(read_json(HERE / "mcpb" / "manifest.json"))
    manifest["tools"] = tools(binary)
    write_json(out / "manifest.json", manifest)
    shutil.copyfile(LICENSE, out / "LICENSE")
    executable(binary, out / "server" / "scratchpad-mcp")


def stage_server_json(mcpb, out):
    """The repository's server.json, with the bundle added as a package: its release URL
    and its SHA-256, which the registry requires and only the built bundle can give."""
    server = read_json(ROOT / "server.json")
    bundle = pathlib.Path(mcpb)
    server["packages"].append({
        "registryType": "mcpb",
        "identifier": f"{RELEASES}/v{version()}/{bundle.name}",
        "version": version(),
        "fileSha256": hashlib.sha256(bundle.read_bytes()).hexdigest(),
        "transport": {"type": "stdio"},
    })
    write_json(out, server)


def main(command, *args):
    if command == "version":
        print(version())
    elif command == "npm":
        stage_npm(*args)
    elif command == "mcpb":
        stage_mcpb(*args)
    elif command == "server-json":
        stage_server_json(*args)
    else:
        sys.exit(f"stage.py: unknown command {command!r}; see its docstring")


if __name__ == "__main__":
    main(*sys.argv[1:])
