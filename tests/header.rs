//! The committed C header must equal a fresh cbindgen generation.
//! Regenerate with `VH5_UPDATE_HEADER=1 cargo build` (see build.rs).

#[test]
fn committed_header_is_fresh() {
    let generated = std::fs::read_to_string(concat!(env!("OUT_DIR"), "/vh5.h")).expect("generated header in OUT_DIR");
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/vh5.h"))
        .expect("include/vh5.h is missing: run `VH5_UPDATE_HEADER=1 cargo build`");
    assert!(
        generated == committed,
        "include/vh5.h is stale: regenerate it with `VH5_UPDATE_HEADER=1 cargo build` and commit it"
    );
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
