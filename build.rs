//! Build script: generates the C header with cbindgen, sets the shared library's soname,
//! turns the libhdf5 version hdf5-sys found into cfgs (see `src/hdf5/compat.rs`) and, for a
//! libhdf5 outside the system's library directories (`HDF5_DIR`), records its directory as
//! the run-time search path of every binary, so they run without `LD_LIBRARY_PATH`.
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

    hdf5_cfgs();
    hdf5_rpath();

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

/// `hdf5_1_12`, `hdf5_1_14`, `hdf5_2`: set when the libhdf5 hdf5-sys builds against is at
/// least 1.12.0, 1.14.0, 2.0.0 (hdf5-sys exports `DEP_HDF5_VERSION_<maj>_<min>_<mic>=1` for
/// every release it knows up to the one found).
fn hdf5_cfgs() {
    for (cfg, var) in [("hdf5_1_12", "DEP_HDF5_VERSION_1_12_0"), ("hdf5_1_14", "DEP_HDF5_VERSION_1_14_0"), ("hdf5_2", "DEP_HDF5_VERSION_2_0_0")] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        if env::var_os(var).is_some() {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}

/// With `HDF5_DIR` (a libhdf5 installed under a prefix of its own; hdf5-sys links
/// `$HDF5_DIR/lib`) and a shared libhdf5 (not the `static-hdf5` feature), every binary built
/// here (libvh5.so, the vh5 CLI, tests) gets `$HDF5_DIR/lib` as its run-time search path
/// (DT_RUNPATH): libvh5.so then finds that libhdf5 for its C, C++ and Python callers too.
fn hdf5_rpath() {
    println!("cargo:rerun-if-env-changed=HDF5_DIR");
    if env::var_os("CARGO_FEATURE_STATIC_HDF5").is_some() || env::var("CARGO_CFG_TARGET_FAMILY").as_deref() != Ok("unix") {
        return;
    }
    let Some(dir) = env::var_os("HDF5_DIR") else { return };
    for lib in ["lib", "lib64"] {
        let d = PathBuf::from(&dir).join(lib);
        if d.is_dir() {
            println!("cargo::rustc-link-arg=-Wl,-rpath,{}", d.display());
        }
    }
}
