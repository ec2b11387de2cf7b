//! The records core hands every surface as JSON (`describe`, `list` and `stats` results), as
//! Python `TypedDict`s and Node interfaces: their keys, types and docs come from core's JSON
//! Schema of each record (`schemars`, from the structs and their doc comments), each in its
//! surface's spelling (core's `spelling` module: Python drops `_ms` and has float seconds, Node
//! camelCases). A JSON Schema object keeps no key order, so the order is read from the structs'
//! source, which must name the same keys.

use std::fmt::Write as _;
use std::path::Path;

use rlock::surface::{key_for, Surface};
use serde_json::{Map, Value};

/// The records, in the order the surfaces list them: (core's file, struct, surface name).
/// A record's nested records come before it.
const RECORDS: [(&str, &str, &str); 9] = [
    ("core/src/describe/mod.rs", "ClientRecord", "ClientRecord"),
    ("core/src/describe/mod.rs", "Holder", "Holder"),
    ("core/src/describe/mod.rs", "QueuedWaiter", "QueuedWaiter"),
    ("core/src/describe/mod.rs", "HeldPermit", "HeldPermit"),
    ("core/src/describe/mod.rs", "Channel", "Channel"),
    ("core/src/describe/mod.rs", "Description", "Description"),
    ("core/src/describe/mod.rs", "Listed", "Listed"),
    ("core/src/metrics.rs", "Summary", "StatsSummary"),
    ("core/src/metrics.rs", "Stats", "Stats"),
];

/// One field of a record.
struct Field {
    /// Core's JSON key.
    key: String,
    schema: Value,
    doc: String,
}

/// One record: its surface name, first doc paragraph and fields in core's order.
struct Record {
    name: &'static str,
    doc: String,
    fields: Vec<Field>,
}

/// Every schema definition of the records, by the name the schema gives it (the surface name);
/// made once.
fn definitions() -> &'static Map<String, Value> {
    static DEFS: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    DEFS.get_or_init(make_definitions)
}

fn make_definitions() -> Map<String, Value> {
    let mut defs = Map::new();
    for root in [
        schemars::schema_for!(rlock::Description),
        schemars::schema_for!(rlock::Listed),
        schemars::schema_for!(rlock::Stats),
        schemars::schema_for!(rlock::LostEvent),
    ] {
        let mut v = root.to_value();
        if let Some(Value::Object(nested)) = v.as_object_mut().and_then(|o| o.remove("$defs")) {
            defs.extend(nested);
        }
        let title = v.get("title").and_then(Value::as_str).unwrap_or_default().to_owned();
        defs.insert(title, v);
    }
    defs
}

/// The JSON keys of struct `name` in `file`, in declaration order (serde's `rename` applied).
fn key_order(root: &Path, file: &str, name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root.join(file)).unwrap_or_else(|e| fail(&format!("{file}: {e}")));
    let parsed = syn::parse_file(&text).unwrap_or_else(|e| fail(&format!("{file}: {e}")));
    let found = parsed.items.iter().find_map(|item| match item {
        syn::Item::Struct(s) if s.ident == name => Some(s),
        _ => None,
    });
    let Some(s) = found else { fail(&format!("no struct {name} in {file}")) };
    s.fields
        .iter()
        .map(|f| {
            let renamed = f.attrs.iter().filter(|a| a.path().is_ident("serde")).find_map(|a| {
                let mut to = None;
                let _ = a.parse_nested_meta(|m| {
                    if m.path.is_ident("rename") {
                        to = Some(m.value()?.parse::<syn::LitStr>()?.value());
                    } else if m.input.peek(syn::Token![=]) {
                        let _ = m.value()?.parse::<syn::Expr>()?;
                    }
                    Ok(())
                });
                to
            });
            renamed.unwrap_or_else(|| f.ident.as_ref().map(ToString::to_string).unwrap_or_default())
        })
        .collect()
}

fn fail(why: &str) -> ! {
    eprintln!("tools/generate (records): {why}");
    std::process::exit(2);
}

/// The records, read from core.
fn records(root: &Path) -> Vec<Record> {
    read(root, &RECORDS)
}

/// The records `list` names, read from core.
fn read(root: &Path, list: &[(&str, &str, &'static str)]) -> Vec<Record> {
    let defs = definitions();
    list.iter()
        .map(|&(file, strukt, name)| {
            let Some(def) = defs.get(name) else { fail(&format!("no schema named {name}")) };
            let props = def.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
            let order = key_order(root, file, strukt);
            let mut keys: Vec<&String> = props.keys().collect();
            keys.sort();
            let mut ordered: Vec<&String> = order.iter().collect();
            ordered.sort();
            if keys != ordered {
                fail(&format!("{strukt}: the schema has keys {keys:?}, the struct {ordered:?}"));
            }
            let fields = order
                .iter()
                .map(|k| {
                    let schema = props.get(k).cloned().unwrap_or_default();
                    let mut doc =
                        schema.get("description").and_then(Value::as_str).unwrap_or_default().to_owned();
                    if doc.is_empty() {
                        fail(&format!("{strukt}.{k} has no doc comment"));
                    }
                    // An enum of core's (but Kind, documented where the surfaces name it): each
                    // value with the first sentence of its doc.
                    let named = schema.get("$ref").and_then(Value::as_str).and_then(|r| r.rsplit('/').next());
                    if let Some(values) = named.filter(|n| *n != "Kind").and_then(|n| enum_values(defs, n)) {
                        let each: Vec<String> = values
                            .iter()
                            .map(|(v, d)| format!("`\"{v}\"` ({})", first_sentence(d)))
                            .collect();
                        doc = format!("{doc} One of: {}.", each.join("; "));
                    }
                    Field { key: k.clone(), schema, doc }
                })
                .collect();
            let doc = def.get("description").and_then(Value::as_str).unwrap_or_default();
            let first = doc.split("\n\n").next().unwrap_or_default().to_owned();
            Record { name, doc: first, fields }
        })
        .collect()
}

/// The first sentence of `doc`, without its period.
fn first_sentence(doc: &str) -> String {
    let one = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let first = one.split(". ").next().unwrap_or_default().trim_end_matches('.');
    // Lower case to begin, as it follows the value in parentheses.
    let mut chars = first.chars();
    chars.next().map(|c| c.to_lowercase().chain(chars).collect()).unwrap_or_default()
}

/// A doc comment's text for `surface` ("python" or "node"): one line, intra-doc links reduced
/// to their text, Rust's `None` spelled as the surface spells it, `Client::x` as `Client.x`.
fn doc_text(doc: &str, python: bool) -> String {
    let mut s = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    // [`X`](path) and [`X`] -> `X`
    while let Some(b) = s.find("[`") {
        let Some(e) = s[b..].find("`]").map(|e| b + e) else { break };
        let label = s[b + 1..e + 1].to_owned();
        let mut end = e + 2;
        if s[end..].starts_with('(') {
            end = s[end..].find(')').map_or(end, |p| end + p + 1);
        }
        s.replace_range(b..end, &label);
    }
    s = s.replace("Client::", "Client.");
    if python {
        s = s.replace("`null`", "`None`");
        // reStructuredText literals: double backticks.
        s.replace('`', "``").replace("````", "``")
    } else {
        s.replace("`None`", "`null`")
    }
}

/// The values of the enum definition `name` (a `oneOf` of `const`s), with their docs.
fn enum_values(defs: &Map<String, Value>, name: &str) -> Option<Vec<(String, String)>> {
    let one_of = defs.get(name)?.get("oneOf")?.as_array()?;
    one_of
        .iter()
        .map(|v| {
            let value = v.get("const")?.as_str()?.to_owned();
            let doc = v.get("description").and_then(Value::as_str).unwrap_or_default().to_owned();
            Some((value, doc))
        })
        .collect()
}

/// A field's type, in Python's spelling (`python`) or TypeScript's (`ms`: a key ending `_ms`,
/// float seconds in Python). An enum other than `Kind` (which both surfaces name) is spelled
/// out as its values.
fn type_of(schema: &Value, ms: bool, python: bool) -> String {
    let defs = definitions();
    // An optional record: anyOf [the record, null].
    if let Some(Value::Array(any)) = schema.get("anyOf") {
        let null = serde_json::json!({"type": "null"});
        let others: Vec<&Value> = any.iter().filter(|s| **s != null).collect();
        if let [one] = others.as_slice() {
            let t = type_of(one, ms, python);
            return if others.len() < any.len() {
                if python {
                    format!("Optional[{t}]")
                } else {
                    format!("{t} | null")
                }
            } else {
                t
            };
        }
    }
    let nullable = match schema.get("type") {
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => false,
    };
    let wrap = |t: String| match (nullable, python) {
        (false, _) => t,
        (true, true) => format!("Optional[{t}]"),
        (true, false) => format!("{t} | null"),
    };
    if let Some(Value::Array(values)) = schema.get("enum") {
        let named: Vec<String> = values
            .iter()
            .filter_map(Value::as_str)
            .map(|v| if python { format!("{v:?}") } else { format!("'{v}'") })
            .collect();
        return if python { wrap(format!("Literal[{}]", named.join(", "))) } else { wrap(named.join(" | ")) };
    }
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or_default();
        if name != "Kind" {
            if let Some(values) = enum_values(defs, name) {
                let quoted: Vec<String> = values
                    .iter()
                    .map(|(v, _)| if python { format!("{v:?}") } else { format!("'{v}'") })
                    .collect();
                return if python { format!("Literal[{}]", quoted.join(", ")) } else { quoted.join(" | ") };
            }
        }
        // Else a type both surfaces name: Kind, or one of the records generated here.
        if name != "Kind" && !RECORDS.iter().any(|&(_, _, record)| record == name) {
            fail(&format!(
                "a reference to {name}, which no surface names (an enum needs a doc comment on every value)"
            ));
        }
        return name.to_owned();
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => {
            ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or_default().to_owned()
        }
        _ => String::new(),
    };
    let base = match (kind.as_str(), python) {
        ("array", _) => {
            let item = type_of(schema.get("items").unwrap_or(&Value::Null), false, python);
            if python {
                format!("List[{item}]")
            } else {
                format!("{item}[]")
            }
        }
        ("object", _) => {
            let value = type_of(schema.get("additionalProperties").unwrap_or(&Value::Null), false, python);
            if python {
                format!("Dict[str, {value}]")
            } else {
                format!("Record<string, {value}>")
            }
        }
        ("integer" | "number", true) if ms => "float".to_owned(),
        ("integer", true) => "int".to_owned(),
        ("number", true) => "float".to_owned(),
        ("integer" | "number", false) => "number".to_owned(),
        ("string", true) => "str".to_owned(),
        ("string", false) => "string".to_owned(),
        ("boolean", true) => "bool".to_owned(),
        ("boolean", false) => "boolean".to_owned(),
        _ => fail(&format!("a schema the generator does not know: {schema}")),
    };
    wrap(base)
}

/// `text` as a Python docstring indented by four spaces, wrapped at 100 columns.
fn docstring(text: &str) -> String {
    // Lines of at most 97 columns: the opening quotes take 7 of the first, the indent 4 of the
    // others.
    format!("    \"\"\"{}\"\"\"\n", wrap(text, 97 - 7, 97 - 4).join("\n    "))
}

/// The generated block of `_describe.py` (`stats`: false) or `_stats.py` (true).
pub fn python(root: &Path, stats: bool) -> String {
    let mut out = String::new();
    for r in records(root).into_iter().filter(|r| r.name.starts_with("Stats") == stats) {
        let _ = write!(out, "\n\nclass {}(TypedDict):\n{}\n", r.name, docstring(&doc_text(&r.doc, true)));
        for f in &r.fields {
            let (key, ms) = (key_for(Surface::Python, &f.key), f.key.ends_with("_ms"));
            let _ = write!(
                out,
                "    {key}: {}\n{}",
                type_of(&f.schema, ms, true),
                docstring(&doc_text(&f.doc, true))
            );
        }
    }
    out.trim_start_matches('\n').to_owned()
}

/// `r` as a TypeScript interface.
fn node_interface(r: &Record, extra: &str) -> String {
    let mut out = format!("/** {}{extra} */\nexport interface {} {{\n", doc_text(&r.doc, false), r.name);
    for f in &r.fields {
        let _ = writeln!(
            out,
            "  /** {} */\n  {}: {}",
            doc_text(&f.doc, false),
            key_for(Surface::Node, &f.key),
            type_of(&f.schema, false, false)
        );
    }
    out.push_str("}\n");
    out
}

/// The generated block of `bindings-node/lib/types.ts` with the records.
pub fn node(root: &Path) -> String {
    let mut out = String::new();
    for r in records(root) {
        let extra = if matches!(r.name, "Description" | "Stats") {
            " In Node's spelling: camelCase keys, every key present (`null` where it does not apply), times in Unix ms and durations in ms under keys ending `Ms`."
        } else {
            ""
        };
        let _ = write!(out, "\n{}", node_interface(&r, extra));
    }
    out.trim_start_matches('\n').to_owned()
}

/// Core's lost event (not JSON: each surface builds its own from the event's fields).
const LOST: [(&str, &str, &str); 1] = [("core/src/watchdog/mod.rs", "LostEvent", "LostEvent")];

/// The generated block of `bindings-node/lib/types.ts` with the lost event.
pub fn node_lost(root: &Path) -> String {
    read(root, &LOST).iter().map(|r| node_interface(r, "")).collect()
}

/// The generated fields of Python's `LostEvent` dataclass (`rlock/_lost.py`): each with its
/// doc as `#:` comments; the optional ones default to `None` and must come last.
pub fn python_lost(root: &Path) -> String {
    let mut out = String::new();
    let mut optional_seen = false;
    for r in read(root, &LOST) {
        for f in &r.fields {
            let ty = type_of(&f.schema, false, true);
            let optional = ty.starts_with("Optional[");
            if optional_seen && !optional {
                fail(&format!(
                    "LostEvent.{} comes after an optional field: a dataclass needs defaults last",
                    f.key
                ));
            }
            optional_seen |= optional;
            for line in wrap(&doc_text(&f.doc, true), 100 - 7, 100 - 7) {
                let _ = writeln!(out, "    #: {line}");
            }
            let default = if optional { " = None" } else { "" };
            let _ = writeln!(out, "    {}: {ty}{default}", f.key);
        }
    }
    out
}

/// `text` in lines of at most `width` characters, the first at most `first` (a longer word gets
/// a line of its own).
fn wrap(text: &str, first: usize, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        let room = if lines.len() == 1 { first } else { width };
        match lines.last_mut() {
            Some(last) if last.len() + 1 + word.len() <= room => {
                last.push(' ');
                last.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    lines
}

/// The describe family's records C documents by their keys, in core's order.
const C_DOCUMENTED: [&str; 7] =
    ["Description", "Holder", "ClientRecord", "QueuedWaiter", "HeldPermit", "Channel", "Listed"];

/// What is wrong with the C doc comments of `core/src/ffi/describe.rs`: C hands on core's JSON as
/// it is, so its docs name each record's keys (`{"name", "kind", ...}`), which must be core's, in
/// core's order. Empty when they are.
pub fn c_describe_doc_drift(root: &Path) -> Vec<String> {
    let file = "core/src/ffi/describe.rs";
    let text = std::fs::read_to_string(root.join(file)).unwrap_or_else(|e| fail(&format!("{file}: {e}")));
    let doc: String = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("///"))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    // Every `{"a", "b", ...}` group of the doc.
    let mut groups: Vec<Vec<String>> = Vec::new();
    let mut rest = doc.as_str();
    while let Some(b) = rest.find("{\"") {
        let Some(e) = rest[b..].find('}').map(|e| b + e) else { break };
        let keys = rest[b + 1..e].split(',').map(|k| k.trim().trim_matches('"').to_owned()).collect();
        groups.push(keys);
        rest = &rest[e + 1..];
    }
    read(root, &RECORDS)
        .iter()
        .filter(|r| C_DOCUMENTED.contains(&r.name))
        .filter_map(|r| {
            let keys: Vec<String> = r.fields.iter().map(|f| f.key.clone()).collect();
            (!groups.contains(&keys)).then(|| {
                let shown: Vec<String> = keys.iter().map(|k| format!("{k:?}")).collect();
                format!(
                    "{file}: its doc does not name {}'s keys as core has them: {{{}}}",
                    r.name,
                    shown.join(", ")
                )
            })
        })
        .collect()
}

/// The doc comment of a field, on one line.
fn field_doc(f: &syn::Field) -> String {
    let lines: Vec<String> = f
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    lines.join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// C's stats structs (`core/src/ffi/stats.rs`) against core's records: the same fields in the
/// same order, and the same doc for each field C holds as core does (all but `errors`, slots by
/// result code, and `eviction_policy`, a fixed-size string). Empty when they agree.
pub fn c_stats_drift(root: &Path) -> Vec<String> {
    let file = "core/src/ffi/stats.rs";
    let text = std::fs::read_to_string(root.join(file)).unwrap_or_else(|e| fail(&format!("{file}: {e}")));
    let parsed = syn::parse_file(&text).unwrap_or_else(|e| fail(&format!("{file}: {e}")));
    let mut drift = Vec::new();
    for (c_name, record) in [("rlock_stats_summary", "StatsSummary"), ("rlock_stats", "Stats")] {
        let Some(c) = parsed.items.iter().find_map(|i| match i {
            syn::Item::Struct(s) if s.ident == c_name => Some(s),
            _ => None,
        }) else {
            fail(&format!("no struct {c_name} in {file}"))
        };
        let Some(core) = read(root, &RECORDS).into_iter().find(|r| r.name == record) else {
            fail(&format!("no record {record}"))
        };
        let c_keys: Vec<String> =
            c.fields.iter().map(|f| f.ident.as_ref().map(ToString::to_string).unwrap_or_default()).collect();
        let core_keys: Vec<String> = core.fields.iter().map(|f| f.key.clone()).collect();
        if c_keys != core_keys {
            drift.push(format!("{file}: {c_name} has fields {c_keys:?}, core's {record} {core_keys:?}"));
            continue;
        }
        for (cf, f) in c.fields.iter().zip(&core.fields) {
            let core_doc = f.doc.split_whitespace().collect::<Vec<_>>().join(" ");
            if !matches!(f.key.as_str(), "errors" | "eviction_policy") && field_doc(cf) != core_doc {
                drift.push(format!("{file}: the doc of {c_name}.{} is not core's: {core_doc:?}", f.key));
            }
        }
    }
    drift
}
