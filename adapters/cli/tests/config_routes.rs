//! `telering config` knows the route variables: set, they are shown as read by
//! telering, not as a probable misspelling.

use telering_std::EnvSource;
use telering_std::config::Source;

#[test]
fn the_route_variables_are_known_to_telering_config() {
    let env = EnvSource::from_pairs([("TELERING_ROUTES_MAX", "8"), ("TELERING_SLOW_XFERS", "2")]);
    let settings = telering_cli::config::settings(&env).unwrap();
    for (name, value) in [("TELERING_ROUTES_MAX", "8"), ("TELERING_SLOW_XFERS", "2")] {
        let s = settings.iter().find(|s| s.name == name).unwrap();
        assert!(s.known, "{name}");
        assert_eq!(
            (s.value.as_str(), &s.source),
            (value, &Some(Source::Environment))
        );
    }
    assert!(settings.iter().all(|s| s.known));
}
