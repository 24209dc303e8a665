//! `/api/agents` gives each agent's name as it is (`agent`, the key a filter matches)
//! and as a person may read it (`shown`, escaped by telering's one escaper), which is
//! what the dashboard shows: a file name with control or bidirectional characters,
//! HTML, 300 bytes or an `ESC` cannot reorder or hide what the page shows.

use telering_cli::serve::agents_json::{AgentsJson, AgentsQuery};
use telering_core::{Category, Event, builtin};
use telering_prometheus::{Buckets, MetricModel};

#[test]
fn api_agents_shows_a_hostile_agent_name_escaped_beside_the_name_itself() {
    let long = "n".repeat(300);
    let hostile = [
        "rank\u{202e}gpj.exe",
        "<script>alert(1)</script>",
        "x\u{1b}]0;pwned\u{7}\ny",
        long.as_str(),
    ];
    let mut model = MetricModel::new("node", Buckets::default());
    for name in hostile {
        let tx = Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, 1);
        model.ingest(name, &[tx]);
    }
    let page = AgentsJson::from_model(&model, 1).page(&AgentsQuery::default());
    let v: serde_json::Value = serde_json::from_str(&page).unwrap();
    let agents = v["agents"].as_array().unwrap();
    assert_eq!(agents.len(), hostile.len(), "{page}");
    let shown = |name: &str| -> String {
        let a = agents
            .iter()
            .find(|a| a["agent"] == name)
            .unwrap_or_else(|| panic!("{name:?} in {page}"));
        a["shown"].as_str().unwrap().to_owned()
    };
    assert_eq!(shown(hostile[0]), "rank\\u{202e}gpj.exe");
    assert_eq!(
        shown(hostile[1]),
        "<script>alert(1)</script>",
        "textContent, never markup"
    );
    assert_eq!(shown(hostile[2]), "x\\u{1b}]0;pwned\\u{7}\\ny");
    assert_eq!(shown(&long), long);
}
