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
mod sample_cmd;
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
                        [--save OUT.npy] [--show K] [--repeat R] [--planner MODE]
                        [--allow-external]
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
///
/// A libhdf5 error stack (`; libhdf5 error stack:` then one `#NNN: ...` line per frame,
/// outermost first) is turned around: the innermost frame's description, the most specific
/// reason ("chunk size must be <= maximum dimension size"), follows the context at once, and
/// the frames are listed innermost first.
pub fn cli_message(message: &str) -> String {
    let message = message.replace(vh5::hdf5::external::ALLOW_EXTERNAL_HINT, "run the command with --allow-external (trusted files only)");
    const STACK: &str = "; libhdf5 error stack:";
    let Some(at) = message.find(STACK) else { return message };
    // Frames start with "\n  #NNN: " (a frame's own text may hold a newline: libhdf5 writes
    // one into H5F_open's "unable to open file: time = ...").
    let Some(stack) = message[at + STACK.len()..].strip_prefix("\n  #") else { return message };
    let frames: Vec<&str> = stack.split("\n  #").collect();
    // "010: H5Dchunk.c:1 in f(): reason [Major: minor]": the reason is after "(): "
    let innermost = frames[frames.len() - 1];
    let reason = innermost.split_once("(): ").map_or(innermost, |(_, r)| r);
    let listed: String = frames.iter().rev().map(|f| format!("\n  #{f}")).collect();
    format!("{}: {reason}; libhdf5 error stack, innermost frame first:{listed}", &message[..at])
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
        "make-sample" => sample_cmd::run_make_sample(rest),
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
    fn cli_message_puts_the_innermost_libhdf5_frame_first() {
        let m = "H5Dcreate2; libhdf5 error stack:\n  #000: H5D.c:1 in H5Dcreate2(): unable to create dataset [Dataset: Unable to initialize object]\n  #001: H5Dchunk.c:2 in H5D__chunk_construct(): chunk size must be <= maximum dimension size for fixed-sized dimensions [Dataset: Unable to initialize object]";
        let got = cli_message(m);
        assert!(got.starts_with("H5Dcreate2: chunk size must be <= maximum dimension size for fixed-sized dimensions [Dataset: Unable to initialize object]; libhdf5 error stack, innermost frame first:\n  #001: "), "{got}");
        assert!(got.ends_with("#000: H5D.c:1 in H5Dcreate2(): unable to create dataset [Dataset: Unable to initialize object]"), "{got}");
        assert_eq!(cli_message("no stack here"), "no stack here");
        let m = "creating x; libhdf5 error stack:\n  #000: H5F.c:1 in H5Fcreate(): unable to create file [A: B]\n  #001: H5Fint.c:2 in H5F_open(): unable to open file: time = now\n, name = 'x' [A: B]\n  #002: H5FDsec2.c:3 in H5FD__sec2_open(): errno = 2 [A: C]";
        let got = cli_message(m);
        assert!(got.starts_with("creating x: errno = 2 [A: C]; libhdf5 error stack, innermost frame first:\n  #002: "), "{got}");
        assert!(got.contains("time = now\n, name = 'x' [A: B]\n  #000: H5F.c:1"), "{got}");
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
