//! `vh5` command-line tool: inspect payloads and HDF5 files, read many slices.
//!
//! Subcommands:
//! - `vh5 payload [--json] [--values N|all] [FILE ...]` (stdin when no file or `-`): summary
//!   of payload files; `vh5 payload --make-samples DIR`: write sample payloads.
//! - `vh5 info [--allow-external] FILE`: datasets with shape, dtype, chunks and filters;
//!   `vh5 info --version`: vh5's version and the libhdf5 in use.
//! - `vh5 read FILE DATASET ...`: many-slice read with checksum and timing.
//! - `vh5 make-sample FILE`: write the demo's sample dataset.

mod info_cmd;
mod names;
mod payload_cmd;
mod payload_doc;
mod read_cmd;
mod sniff;
mod table;

/// Every command and option (the README's "Command-line tool" section lists the same).
const USAGE: &str = "usage:
  vh5 payload [--json] [--values N|all] [FILE ...]
        summarise array payloads (stdin if no FILE or FILE is -); --json: one JSON object
        per line; --values: how many values to show (default 8)
  vh5 payload --make-samples DIR
        write sample payloads of every layout into DIR
  vh5 info [--allow-external] FILE
        list datasets: shape, dtype, chunks, filters, fill value
  vh5 info --version
        vh5's version and the libhdf5 in use
  vh5 read FILE DATASET (--table ROWS.csv | --random N --size A,B,..) [--seed S] [--clip]
                        [--save OUT.npy] [--show K] [--repeat R] [--allow-external]
        read many slices, print a checksum and the time
  vh5 make-sample FILE [--shape 2000,2000] [--chunk 100,100]
        write a float64 gzip+shuffle sample dataset /data (default 2000x2000, 100x100 chunks)
  vh5 --version
  vh5 --help
  vh5 SUBCOMMAND --help: every option of a subcommand";

/// Print the usage to stderr and exit 2 (a usage error).
fn usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2)
}

/// `"VH5_ERR_INVALID_ARGUMENT"`, ...: the C API's status name for an error kind (the names
/// `vh5_status_name` returns), used as the prefix of every CLI error message.
pub fn status_name(k: vh5::error::ErrorKind) -> String {
    format!("{:?}", vh5::ffi::vh5_status::from(k))
}

/// `message` as a CLI user should read it: the C / Python way to allow external data
/// ([`vh5::hdf5::external::ALLOW_EXTERNAL_HINT`]) becomes the command's `--allow-external` option.
pub fn cli_message(message: &str) -> String {
    message.replace(vh5::hdf5::external::ALLOW_EXTERNAL_HINT, "run the command with --allow-external (trusted files only)")
}

/// Print `vh5: VH5_ERR_...: message` to stderr; returns exit code 1.
pub fn fail(e: &vh5::error::Error) -> i32 {
    eprintln!("vh5: {}: {}", status_name(e.kind), cli_message(&e.message));
    1
}

/// `n` followed by `word`, with an "s" unless `n` is 1 ("1 zero", "3 zeros").
pub fn plural(n: impl std::fmt::Display, word: &str) -> String {
    let one = n.to_string() == "1";
    format!("{n} {word}{}", if one { "" } else { "s" })
}

fn main() {
    // Like other Unix tools, end quietly when the reader of stdout goes away (`vh5 ... | head`):
    // Rust ignores SIGPIPE, so println! would panic with "Broken pipe" instead.
    // SAFETY: setting a signal disposition to the default before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let args: Vec<String> = match std::env::args_os().skip(1).map(|a| a.into_string()).collect() {
        Ok(args) => args,
        Err(bad) => {
            use std::os::unix::ffi::OsStrExt;
            eprintln!(
                "vh5: argument `{}` is not valid UTF-8: give a dataset name's bytes that are not UTF-8 as \\xNN escapes \
                 (as `vh5 info` lists them, a backslash as \\\\); file names must be UTF-8",
                vh5::names::escape(bad.as_bytes())
            );
            std::process::exit(2)
        }
    };
    let Some(cmd) = args.first() else { usage() };
    let rest = &args[1..];
    let code = match cmd.as_str() {
        "payload" => payload_cmd::run(rest),
        "info" => info_cmd::run(rest),
        "read" => read_cmd::run_read(rest),
        "make-sample" => read_cmd::run_make_sample(rest),
        "--version" | "-V" => info_cmd::print_version(),
        "--help" | "-h" | "help" => {
            println!("{USAGE}");
            0
        }
        other => {
            eprintln!("vh5: unknown subcommand {other:?}");
            usage()
        }
    };
    std::process::exit(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plural_and_status_names() {
        assert_eq!(plural(1, "zero"), "1 zero");
        assert_eq!(plural(0, "zero"), "0 zeros");
        assert_eq!(plural(serde_json::json!(1), "element"), "1 element");
        assert_eq!(plural(serde_json::json!(12), "element"), "12 elements");
        assert_eq!(status_name(vh5::error::ErrorKind::InvalidArgument), "VH5_ERR_INVALID_ARGUMENT");
        assert_eq!(status_name(vh5::error::ErrorKind::NoMemory), "VH5_ERR_NO_MEMORY");
    }

    #[test]
    fn usage_lists_every_readme_command_and_option() {
        let readme = include_str!("../../../README.md");
        let section = readme.split("## Command-line tool").nth(1).unwrap().split("```").nth(1).unwrap();
        for line in section.lines().filter(|l| l.starts_with("vh5 ")) {
            let cmd = line.split_whitespace().nth(1).unwrap();
            assert!(USAGE.contains(&format!("vh5 {cmd}")), "{cmd} missing from the usage");
            for opt in line.split(|c: char| c.is_whitespace() || "[]()|".contains(c)).filter(|w| w.starts_with("--")) {
                assert!(USAGE.contains(opt), "{opt} (README: {line:?}) missing from the usage");
            }
        }
        for opt in ["--values N|all", "--make-samples DIR", "--seed", "--show", "--shape", "--chunk"] {
            assert!(USAGE.contains(opt), "{opt}");
        }
    }
}
