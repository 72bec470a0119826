//! The rules shipped with cudalog (the repository's `rules/`), embedded in
//! the binary so that an installed `cudalog` has them.

/// Shipped lints that are off unless `[rules] enable` names them: they
/// state a house convention, not a defect (few code bases declare
/// `__launch_bounds__`; a barrier in a helper is fine when every call site
/// is reached by the whole block, which `barrier-divergence` checks), so on
/// by default they would bury the findings that matter.
/// `uncoalesced_in_looped_launch` restates, at the same line, an
/// `uncoalesced-global` warning (it reports only those): the blind audits
/// so far judged 23 of its 36 rows debatable or false (issue 8,
/// session 13; docs/eval/audit_*.md), so it is a house rule to turn on where
/// launch loops are the hot path.
pub const OPT_IN: &[&str] = &[
    "missing_launch_bounds",
    "barrier_in_device_function",
    "uncoalesced_in_looped_launch",
];

/// (path as shown, text) of every shipped rule file.
pub const SHIPPED: &[(&str, &str)] = &[
    (
        "rules/barrier_in_device_function.dl",
        include_str!("../../rules/barrier_in_device_function.dl"),
    ),
    (
        "rules/fp64_arithmetic.dl",
        include_str!("../../rules/fp64_arithmetic.dl"),
    ),
    (
        "rules/global_atomic_in_loop.dl",
        include_str!("../../rules/global_atomic_in_loop.dl"),
    ),
    (
        "rules/missing_launch_bounds.dl",
        include_str!("../../rules/missing_launch_bounds.dl"),
    ),
    (
        "rules/uncoalesced_in_looped_launch.dl",
        include_str!("../../rules/uncoalesced_in_looped_launch.dl"),
    ),
    (
        "rules/unpadded_shared_tile.dl",
        include_str!("../../rules/unpadded_shared_tile.dl"),
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_rules_is_embedded_and_compiles() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("rules");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".dl"))
            .map(|n| format!("rules/{n}"))
            .collect();
        on_disk.sort();
        let embedded: Vec<String> = SHIPPED.iter().map(|(p, _)| p.to_string()).collect();
        assert_eq!(
            on_disk, embedded,
            "list every rules/*.dl in SHIPPED (sorted)"
        );
        let schema = super::super::schema::StoreSchema::current().unwrap();
        for (path, text) in SHIPPED {
            let src = super::super::RuleSource::new(*path, super::super::Origin::Shipped, *text);
            let p = super::super::compile::compile(&src, &schema)
                .unwrap_or_else(|e| panic!("{}", e.iter().map(|e| e.render()).collect::<String>()));
            assert_eq!(p.lints.len(), 1, "{path}: one lint per shipped file");
            let stem = path.trim_start_matches("rules/").trim_end_matches(".dl");
            assert_eq!(
                p.lints[0].name, stem,
                "{path}: the lint is named after its file"
            );
        }
    }
}
