//! The committed C header must equal a fresh cbindgen generation.
//! Regenerate with `VH5_UPDATE_HEADER=1 cargo build` (see build.rs).

#[test]
fn committed_header_is_fresh() {
    let generated = std::fs::read_to_string(concat!(env!("OUT_DIR"), "/vh5.h")).expect("generated header in OUT_DIR");
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/vh5.h")).expect("include/vh5.h is missing: run `VH5_UPDATE_HEADER=1 cargo build`");
    assert!(generated == committed, "include/vh5.h is stale: regenerate it with `VH5_UPDATE_HEADER=1 cargo build` and commit it");
}

#[test]
fn header_version_macros_match_crate() {
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/vh5.h")).unwrap();
    let v = env!("CARGO_PKG_VERSION");
    assert!(committed.contains(&format!("#define VH5_VERSION_STRING \"{v}\"")), "VH5_VERSION_STRING != {v}");
    let mut parts = v.split('.');
    for name in ["MAJOR", "MINOR", "PATCH"] {
        let want = parts.next().unwrap();
        assert!(committed.contains(&format!("#define VH5_VERSION_{name} {want}\n")), "VH5_VERSION_{name} != {want}");
    }
}

/// Every name the header defines (macros, types, enum values, functions) carries the vh5 or
/// payload prefix, so including vh5.h never clashes with a user's or another library's names.
#[test]
fn header_names_are_prefixed() {
    let h = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/vh5.h")).unwrap();
    let ok = |name: &str| {
        let lower = name.to_ascii_lowercase();
        lower.starts_with("vh5_") || lower.starts_with("payload_") || name == "VH5_H"
    };
    let mut bad = vec![];
    for line in h.lines() {
        let t = line.trim_start();
        // macros
        if let Some(rest) = t.strip_prefix("#define ") {
            let name = rest.split(|c: char| c.is_whitespace() || c == '(').next().unwrap();
            if !ok(name) {
                bad.push(name.to_string());
            }
        }
        // enum values: "NAME = value,"
        if let Some((name, _)) = t.split_once(" = ") {
            if name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') && !name.is_empty() && !ok(name) {
                bad.push(name.to_string());
            }
        }
        // struct / enum tags and typedef names
        for kw in ["struct ", "enum ", "typedef "] {
            if t.contains('(') || t.contains(',') || t.contains(')') {
                continue; // a parameter such as `struct payload_view *out);`
            }
            if let Some(rest) = t.strip_prefix(kw) {
                let name = rest.trim_end_matches([';', '{', ' ']).rsplit(' ').next().unwrap_or("");
                let name = name.trim_start_matches('*');
                if !name.is_empty() && !ok(name) && !["int32_t", "uint32_t"].contains(&name) {
                    bad.push(name.to_string());
                }
            }
        }
        // function declarations: "<type> name(" at the start of a line
        if !t.starts_with('*') && !t.starts_with('/') && !t.starts_with('#') {
            if let Some(paren) = t.find('(') {
                let head = &t[..paren];
                if let Some(name) = head.rsplit([' ', '*']).next() {
                    if !name.is_empty() && head.contains(' ') && !ok(name) && !head.starts_with("if") && !head.contains('=') {
                        bad.push(name.to_string());
                    }
                }
            }
        }
    }
    bad.sort();
    bad.dedup();
    assert!(bad.is_empty(), "include/vh5.h defines unprefixed names: {bad:?}");
}

/// Each function is declared exactly once (cbindgen must not see a source file twice).
#[test]
fn header_declares_each_function_once() {
    let h = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/vh5.h")).unwrap();
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for line in h.lines() {
        let t = line.trim_start();
        if t.starts_with('*') || t.starts_with('/') || t.starts_with('#') {
            continue;
        }
        if let Some(paren) = t.find('(') {
            if let Some(name) = t[..paren].rsplit([' ', '*']).next() {
                if name.starts_with("vh5_") || name.starts_with("payload_") {
                    *seen.entry(name.to_string()).or_default() += 1;
                }
            }
        }
    }
    let dups: Vec<_> = seen.iter().filter(|(_, &n)| n > 1).collect();
    assert!(dups.is_empty(), "functions declared more than once in include/vh5.h: {dups:?}");
    assert!(seen.len() >= 16, "expected the whole ABI, found {} functions: {:?}", seen.len(), seen.keys());
}
