//! The parity table, docs/parity.json: one row per operation of every primitive, with its name,
//! parameters and result on each surface. This checks Rust's column by introspection of core's
//! source (parsed with `syn`): every `Type::method` is a `pub fn` of an inherent `impl Type`
//! with those parameters (after `self`) and that result type. `RLOCK_PARITY_WRITE=1` writes
//! what is found into the table instead (after a deliberate API change; review the diff).
//! The second test runs the check the other way: every `pub fn` of a type core exports has a
//! row or is in one of the table's unlisted groups, which say why.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use quote::ToTokens;
use serde_json::{json, Value};

/// `Type::method` -> (parameter names, result type) for every `pub fn` of an inherent impl.
fn public_methods() -> HashMap<String, (Vec<String>, String)> {
    let mut found = HashMap::new();
    let mut files = vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let file = syn::parse_file(&std::fs::read_to_string(&path).unwrap()).unwrap();
        collect(&file.items, &mut found);
    }
    found
}

fn collect(items: &[syn::Item], found: &mut HashMap<String, (Vec<String>, String)>) {
    for item in items {
        match item {
            syn::Item::Mod(m) => collect(m.content.as_ref().map_or(&[][..], |(_, i)| i), found),
            syn::Item::Impl(i) if i.trait_.is_none() => {
                let syn::Type::Path(ty) = &*i.self_ty else { continue };
                let ty = ty.path.segments.last().unwrap().ident.to_string();
                for f in &i.items {
                    let syn::ImplItem::Fn(f) = f else { continue };
                    if !matches!(f.vis, syn::Visibility::Public(_)) {
                        continue;
                    }
                    let params = f
                        .sig
                        .inputs
                        .iter()
                        .filter_map(|a| match a {
                            syn::FnArg::Typed(t) => Some(t.pat.to_token_stream().to_string()),
                            syn::FnArg::Receiver(_) => None,
                        })
                        .collect();
                    let returns = match &f.sig.output {
                        syn::ReturnType::Default => "()".to_owned(),
                        syn::ReturnType::Type(_, t) => t.to_token_stream().to_string().replace(' ', ""),
                    };
                    found.insert(format!("{ty}::{}", f.sig.ident), (params, returns));
                }
            }
            _ => {}
        }
    }
}

#[test]
fn the_rust_column_is_what_core_has() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/parity.json");
    let mut table: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let methods = public_methods();
    let write = std::env::var("RLOCK_PARITY_WRITE").is_ok_and(|v| v == "1");
    let mut wrong = Vec::new();
    for row in table["rows"].as_array_mut().unwrap() {
        let what = format!("{}, {}", row["primitive"], row["operation"]);
        let cell = &mut row["rust"];
        let Some(name) = cell["name"].as_str().map(str::to_owned) else { continue };
        let Some((params, returns)) = methods.get(&name) else { panic!("{what}: core has no pub fn {name}") };
        let expected = json!({ "name": name, "params": params, "returns": returns });
        if write {
            *cell = expected;
        } else if *cell != expected {
            wrong.push(format!("{name}: table {cell}, core {expected}"));
        }
    }
    if write {
        std::fs::write(&path, serde_json::to_string_pretty(&table).unwrap() + "\n").unwrap();
    }
    assert!(wrong.is_empty(), "docs/parity.json's Rust column differs:\n{}", wrong.join("\n"));
}

/// Every type core exports at its root (the `pub use` items of lib.rs, not `surface`'s).
fn root_types() -> HashSet<String> {
    fn names(tree: &syn::UseTree, out: &mut HashSet<String>) {
        match tree {
            syn::UseTree::Path(p) => names(&p.tree, out),
            syn::UseTree::Name(n) => drop(out.insert(n.ident.to_string())),
            syn::UseTree::Rename(r) => drop(out.insert(r.rename.to_string())),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| names(t, out)),
            syn::UseTree::Glob(_) => {}
        }
    }
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs");
    let file = syn::parse_file(&std::fs::read_to_string(lib).unwrap()).unwrap();
    let mut out = HashSet::new();
    for item in &file.items {
        if let syn::Item::Use(u) = item {
            if matches!(u.vis, syn::Visibility::Public(_)) {
                names(&u.tree, &mut out);
            }
        }
    }
    out
}

/// Code to table, the rule of tools/parity.py's `uncovered()`: every `pub fn` of a type core
/// exports is in a row of the Rust column or in an unlisted group (`*::method`: that method on
/// every type; `Type::*`: every method of a type that is no primitive), and every unlisted name
/// is still a `pub fn` of such a type.
#[test]
fn every_public_method_has_a_row_or_a_reason() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/parity.json");
    let table: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let exported = root_types();
    let public: Vec<String> = {
        let mut names: Vec<String> = public_methods()
            .into_keys()
            .filter(|n| exported.contains(n.split("::").next().unwrap()))
            .collect();
        names.sort();
        names
    };
    let named: HashSet<&str> =
        table["rows"].as_array().unwrap().iter().filter_map(|r| r["rust"]["name"].as_str()).collect();
    let unlisted: HashSet<&str> = table["unlisted"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["rust"].as_array())
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let split = |n: &str| -> (String, String) {
        let (owner, member) = n.rsplit_once("::").unwrap();
        (owner.to_owned(), member.to_owned())
    };
    let mut problems = Vec::new();
    for name in &public {
        let (owner, member) = split(name);
        let forms = [name.clone(), format!("*::{member}"), format!("{owner}::*")];
        if !forms.iter().any(|n| named.contains(n.as_str()) || unlisted.contains(n.as_str())) {
            problems.push(format!("rust: {name} is public but in no row and in no unlisted group"));
        }
    }
    for name in &unlisted {
        let (owner, member) = split(name);
        let gone = if owner == "*" {
            !public.iter().any(|p| split(p).1 == member)
        } else if member == "*" {
            !public.iter().any(|p| split(p).0 == owner)
        } else {
            !public.iter().any(|p| p == name)
        };
        if gone {
            problems.push(format!("rust: unlisted {name} is not public any more"));
        }
    }
    problems.sort();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
