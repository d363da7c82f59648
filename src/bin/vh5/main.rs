//! `vh5` command-line tool: inspect payloads and HDF5 files, read many slices.
//!
//! Subcommands:
//! - `vh5 payload [--json] [FILE ...]` (stdin when no file or `-`): summary of payload files.
//! - `vh5 info FILE`: datasets with shape, dtype, chunks and filters.
//! - `vh5 read FILE DATASET ...`: many-slice read with checksum and timing.
//! - `vh5 make-sample FILE`: write the demo's sample dataset.

mod payload_cmd;
mod read_cmd;

fn usage() -> ! {
    eprintln!(
        "usage:\n  vh5 payload [--json] [FILE ...]      summarise array payloads (stdin if no FILE)\n  vh5 info FILE                        list HDF5 datasets\n  vh5 read FILE DATASET [options]      read many slices (vh5 read --help)\n  vh5 make-sample FILE                 write a 2000x2000 float64 gzip+shuffle sample (/data)\n  vh5 --version"
    );
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else { usage() };
    let rest = &args[1..];
    let code = match cmd.as_str() {
        "payload" => payload_cmd::run(rest),
        "info" => read_cmd::run_info(rest),
        "read" => read_cmd::run_read(rest),
        "make-sample" => read_cmd::run_make_sample(rest),
        "--version" | "-V" => {
            println!("vh5 {}", env!("CARGO_PKG_VERSION"));
            0
        }
        "--help" | "-h" | "help" => {
            usage();
        }
        other => {
            eprintln!("vh5: unknown subcommand {other:?}");
            usage()
        }
    };
    std::process::exit(code)
}
