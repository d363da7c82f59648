//! The README's status table is rendered from `vh5::error::STATUSES`, the one definition of the
//! status codes' numbers, names and meanings. `VH5_UPDATE_DOCS=1 cargo test --test status_table`
//! rewrites it after a change to the table.

use vh5::error::STATUSES;

const BEGIN: &str = "<!-- status-table:begin (rendered from src/error.rs STATUSES by tests/status_table.rs) -->\n";
const END: &str = "<!-- status-table:end -->";

fn render() -> String {
    let mut t = String::from("| code | name | when |\n|---|---|---|\n");
    for s in STATUSES {
        t += &format!("| {} | `{}` | {} |\n", s.code, s.name_str(), s.when);
    }
    t
}

#[test]
fn readme_status_table_is_rendered_from_statuses() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let a = readme.find(BEGIN).expect("README.md lacks the status-table:begin marker") + BEGIN.len();
    let b = a + readme[a..].find(END).expect("README.md lacks the status-table:end marker");
    let want = render();
    if readme[a..b] != want {
        if std::env::var("VH5_UPDATE_DOCS").is_ok_and(|v| v == "1") {
            std::fs::write(path, format!("{}{want}{}", &readme[..a], &readme[b..])).unwrap();
            return;
        }
        panic!("README.md's status table differs from src/error.rs STATUSES: run `VH5_UPDATE_DOCS=1 cargo test --test status_table`");
    }
}

/// The header's enum lists exactly the table's names and numbers.
#[test]
fn header_status_enum_matches_statuses() {
    let h = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/vh5.h")).unwrap();
    for s in STATUSES {
        let line = format!("{} = {},", s.name_str(), s.code);
        assert!(h.contains(&line), "include/vh5.h lacks `{line}`");
    }
}
