//! The layers of ARCHITECTURE.md, held to the code: in each crate, a module uses only the
//! modules listed before it (its `crate::` paths outside comments and unit tests), so no
//! import runs back up and there are no cycles. A new module must be placed in the list.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_owned()
}

/// The layers ARCHITECTURE.md gives for `krate`: the backticked names on its `- krate:` line
/// under "## Layers", lowest first.
fn documented(krate: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let section = text
        .split("\n## Layers\n")
        .nth(1)
        .expect("ARCHITECTURE.md has a Layers section");
    let line = section
        .lines()
        .find(|l| l.starts_with(&format!("- {krate}: ")))
        .unwrap_or_else(|| panic!("no `- {krate}:` line under ## Layers"));
    line.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The crate's top-level modules: each `name.rs` and `name/` in `src` but the roots.
fn modules(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src)
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            let name = path.file_stem()?.to_str()?.to_owned();
            let rust_file = path.extension().is_some_and(|x| x == "rs");
            (path.is_dir() || rust_file).then_some(name)
        })
        .filter(|name| name != "lib" && name != "main")
        .collect()
}

/// Every `.rs` file of a module.
fn files(src: &Path, module: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let file = src.join(format!("{module}.rs"));
    if file.is_file() {
        found.push(file);
    }
    let mut folders = vec![src.join(module)];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                found.push(path);
            }
        }
    }
    found
}

/// The first segments of the `crate::` paths in `code`, `crate::{a, b::c}` groups included.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item_start = true;
            let mut segment = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        if !segment.is_empty() {
                            found.insert(std::mem::take(&mut segment));
                        }
                        item_start = true;
                    }
                    c if item_start && (c.is_ascii_alphanumeric() || c == '_') => segment.push(c),
                    _ if item_start && !segment.is_empty() => {
                        found.insert(std::mem::take(&mut segment));
                        item_start = false;
                    }
                    _ => {}
                }
            }
            if !segment.is_empty() {
                found.insert(segment);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            found.insert(name);
        }
    }
    found
}

/// What each module of the crate in `src` uses of its other modules.
fn uses(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules(src);
    modules
        .iter()
        .map(|module| {
            let mut used = BTreeSet::new();
            for file in files(src, module) {
                let text = std::fs::read_to_string(&file).unwrap();
                let code = text
                    .split("#[cfg(test)]\nmod tests")
                    .next()
                    .unwrap_or_default();
                let code: String = code
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("//"))
                    .collect::<Vec<_>>()
                    .join("\n");
                used.extend(
                    crate_paths(&code)
                        .into_iter()
                        .filter(|m| modules.contains(m) && m != module),
                );
            }
            (module.clone(), used)
        })
        .collect()
}

/// Checks the crate at `src` against its documented layers.
fn check(krate: &str, src: &str) {
    let src = root().join(src);
    let layers = documented(krate);
    let place = |m: &str| layers.iter().position(|l| l == m);
    let uses = uses(&src);
    let listed: BTreeSet<String> = layers.iter().cloned().collect();
    let present: BTreeSet<String> = uses.keys().cloned().collect();
    assert_eq!(
        listed, present,
        "ARCHITECTURE.md's {krate} layers must list every module once"
    );
    let mut upward = Vec::new();
    for (module, used) in &uses {
        for dependency in used {
            if place(dependency) >= place(module) {
                upward.push(format!("{module} uses {dependency}"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "in {krate}, imports that run back up the layers: {upward:?}"
    );
}

#[test]
fn the_hosts_modules_use_only_the_layers_below_them() {
    check("host", "host/src");
}

#[test]
fn the_guests_modules_use_only_the_layers_below_them() {
    check("guest", "guest/src");
}

#[test]
fn paths_are_read_from_groups_and_single_uses() {
    let found =
        crate_paths("use crate::a::X;\nuse crate::{b, c::{D, E}, d::F};\nlet x = crate::e::f();");
    assert_eq!(
        found,
        ["a", "b", "c", "d", "e"].map(String::from).into(),
        "{found:?}"
    );
}
