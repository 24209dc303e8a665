//! `dashboards/telering.json` as Grafana imports it: every data source it names is the
//! one its `__inputs` declares (`${DS_PROMETHEUS}`, which the import replaces with the
//! Prometheus data source picked), and every declared input is used.

use serde_json::Value;
use std::path::Path;

fn dashboard() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dashboards/telering.json");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Every `datasource` object's `uid`, wherever it is (panels, targets, variables).
fn datasource_uids(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                if key == "datasource" {
                    out.push(inner["uid"].as_str().unwrap_or("(none)").to_owned());
                }
                datasource_uids(inner, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| datasource_uids(i, out)),
        _ => {}
    }
}

#[test]
fn every_panel_and_variable_uses_the_declared_prometheus_input() {
    let dashboard = dashboard();
    let inputs = dashboard["__inputs"].as_array().expect("__inputs");
    let names: Vec<&str> = inputs.iter().filter_map(|i| i["name"].as_str()).collect();
    assert_eq!(names, ["DS_PROMETHEUS"]);
    assert_eq!(inputs[0]["pluginId"], "prometheus");
    let mut uids = Vec::new();
    datasource_uids(&dashboard, &mut uids);
    assert!(uids.len() >= 15, "{uids:?}");
    let others: Vec<&String> = uids.iter().filter(|u| *u != "${DS_PROMETHEUS}").collect();
    assert!(
        others.is_empty(),
        "data sources other than the input: {others:?}"
    );
}
