//! Core's results (descriptions, lists, stats) as JSON in each surface's spelling, so that
//! bindings hand them on without renaming anything. Core's own JSON ([`crate::describe::to_json`],
//! [`crate::Stats::to_json`]) is C's: snake_case keys, durations and Unix times in milliseconds
//! under keys ending in `_ms`. Python drops the suffix and has float seconds (`ttl`, `now`,
//! `p99`); Node camelCases every key and keeps milliseconds (`ttlMs`, `nowMs`, `p99Ms`). The
//! keys of `errors` (stats by error kind) are data and stay as they are.

use serde::Serialize;
use serde_json::Value;

use crate::options::{camel_case, Surface};

/// `value` as JSON text in `surface`'s spelling (compact, no newline). Never fails: core's
/// results hold only strings, numbers, lists and optional values.
pub fn to_json_for<T: Serialize + ?Sized>(surface: Surface, value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(v) => respell(surface, v).to_string(),
        Err(e) => serde_json::json!({ "error": e.to_string() }).to_string(),
    }
}

fn respell(surface: Surface, v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, x)| {
                    let x = if k == "errors" { x } else { respell(surface, x) };
                    key(surface, k, x)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(|x| respell(surface, x)).collect()),
        other => other,
    }
}

/// Core's JSON key `key` as `surface` spells it: Python drops the suffix `_ms` (its value is in
/// seconds), Node camelCases, C and Rust keep it. tools/generate names the surfaces' typed
/// fields with it.
pub fn key_for(surface: Surface, key: &str) -> String {
    match surface {
        Surface::Python => key.strip_suffix("_ms").unwrap_or(key).to_owned(),
        Surface::Node => camel_case(key),
        Surface::C | Surface::Rust => key.to_owned(),
    }
}

fn key(surface: Surface, k: String, x: Value) -> (String, Value) {
    let seconds = surface == Surface::Python && k.ends_with("_ms");
    let x = if seconds { x.as_f64().map_or(x, |ms| Value::from(ms / 1000.0)) } else { x };
    (key_for(surface, &k), x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_surface_spells_times_its_way() {
        let v = serde_json::json!({
            "ttl_ms": 1500, "now_ms": null, "held_for_ms": 250, "queue_length": 2,
            "holders": [{"since_ms": 1_000_000_000_000u64, "client_id": "c"}],
            "wait": {"p99_ms": 2.5}, "errors": {"not_held": 1},
        });
        let py: Value = serde_json::from_str(&to_json_for(Surface::Python, &v)).unwrap_or_default();
        assert_eq!(py["ttl"], 1.5);
        assert_eq!(py["now"], Value::Null);
        assert_eq!(py["held_for"], 0.25);
        assert_eq!(py["queue_length"], 2);
        assert_eq!(py["holders"][0]["since"], 1_000_000_000.0);
        assert_eq!(py["wait"]["p99"], 0.0025);
        assert_eq!(py["errors"]["not_held"], 1);
        let node: Value = serde_json::from_str(&to_json_for(Surface::Node, &v)).unwrap_or_default();
        assert_eq!(node["ttlMs"], 1500);
        assert_eq!(node["heldForMs"], 250);
        assert_eq!(node["holders"][0]["clientId"], "c");
        assert_eq!(node["wait"]["p99Ms"], 2.5);
        assert_eq!(node["errors"]["not_held"], 1);
        let c: Value = serde_json::from_str(&to_json_for(Surface::C, &v)).unwrap_or_default();
        assert_eq!(c, v);
    }
}
