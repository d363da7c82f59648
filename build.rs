//! Build script: generates the C header with cbindgen and sets the shared library's soname.
//!
//! The header is written to `$OUT_DIR/vh5.h`; `tests/header.rs` fails when the committed
//! `include/vh5.h` differs from it. Regenerate the committed copy with
//! `VH5_UPDATE_HEADER=1 cargo build` (or `scripts/regen-header.sh`).

use std::env;
use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let major = env::var("CARGO_PKG_VERSION_MAJOR").unwrap();

    // soname libvh5.so.<major>, so installed copies can be versioned side by side.
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libvh5.so.{major}");
    }

    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    // Re-run when the committed header is edited or restored, so VH5_UPDATE_HEADER=1 rewrites it.
    println!("cargo:rerun-if-changed=include/vh5.h");
    println!("cargo:rerun-if-env-changed=VH5_UPDATE_HEADER");

    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    config.after_includes = Some(format!(
        "\n/** Version of the vh5 release this header belongs to (same as vh5_version_string()). */\n#define VH5_VERSION_STRING \"{}\"\n",
        env::var("CARGO_PKG_VERSION").unwrap()
    ));
    // Only src/ffi/ is parsed (cbindgen follows its `mod` declarations from mod.rs): the C
    // ABI lives there and nowhere else, so Rust-internal constants and types of the pure
    // modules can never leak into the C namespace.
    let builder = cbindgen::Builder::new().with_src(crate_dir.join("src").join("ffi").join("mod.rs"));
    let bindings = builder.with_config(config).generate().expect("cbindgen failed to generate include/vh5.h");
    let generated = out_dir.join("vh5.h");
    bindings.write_to_file(&generated);
    if env::var_os("VH5_UPDATE_HEADER").is_some() {
        bindings.write_to_file(crate_dir.join("include").join("vh5.h"));
    }
}
