//! The JSON Schema of the lost event and of a describe holder (which tools/generate writes the
//! surfaces' types from) names the values core gives those fields: the hold kinds, from where
//! each is defined, and a read-write lock's two sides.

use crate::describe::Description;
use crate::lock::{READ, REENTRANT, WRITE};
use crate::permit_semaphore::PERMIT;
use crate::watchdog::LostEvent;

use super::RED_LOCK_KIND;

/// The values the schema at `path` (keys from the root) enumerates, nulls left out.
fn enumerated(schema: &serde_json::Value, path: &[&str]) -> Vec<String> {
    let at = path.iter().fold(schema, |v, k| &v[*k]);
    at["enum"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

#[test]
fn the_lost_events_schema_names_every_hold_kind() {
    let schema = schemars::schema_for!(LostEvent).to_value();
    let kinds = [REENTRANT.name, READ.name, WRITE.name, PERMIT.name, RED_LOCK_KIND];
    let mut named = enumerated(&schema, &["properties", "kind"]);
    named.sort_unstable();
    let mut want: Vec<String> = kinds.iter().map(|k| (*k).to_owned()).collect();
    want.sort_unstable();
    assert_eq!(named, want);
}

#[test]
fn a_holders_schema_names_the_two_sides_of_a_read_write_lock() {
    let schema = schemars::schema_for!(Description).to_value();
    assert_eq!(enumerated(&schema, &["$defs", "Holder", "properties", "mode"]), [READ.name, WRITE.name]);
}
