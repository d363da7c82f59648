//! Shared pieces of the hostile-input suite: the report (one table row per case, checked
//! against the expected status and the culprit the message must name), guarded buffers,
//! byte patching of HDF5 files, and the stable message excerpt the table shows.

pub mod files;
pub mod memory;
pub mod payloads;
pub mod shapes;
pub mod subproc;
pub mod tables;
pub mod writes;

use std::ffi::CStr;
use std::path::Path;

use vh5::ffi::vh5_status;

/// One row of the table.
pub struct Case {
    pub class: &'static str,
    pub input: String,
    pub entry: &'static str,
    pub expected: String,
    pub actual: String,
    pub excerpt: String,
}

/// Everything the suite ran: rows for the table and the failed expectations.
#[derive(Default)]
pub struct Report {
    pub cases: Vec<Case>,
    pub failures: Vec<String>,
    /// Temporary paths to replace by `<tmp>` in excerpts.
    pub tmp_prefixes: Vec<String>,
    /// Other run-dependent text (libhdf5 ids) and its stable replacement.
    pub replace: Vec<(String, String)>,
}

pub fn status_name(st: i32) -> String {
    unsafe { CStr::from_ptr(vh5::ffi::vh5_status_name(st)) }.to_str().unwrap().to_string()
}

impl Report {
    /// Record a case: `got` is (status, last-error message); the status must be `expected`
    /// and the message must contain every string of `names` (the culprit).
    pub fn check(&mut self, class: &'static str, input: impl Into<String>, entry: &'static str, expected: vh5_status, got: (vh5_status, String), names: &[&str]) {
        let input = input.into();
        let (st, msg) = got;
        if st != expected {
            self.failures.push(format!("[{class}] {input} ({entry}): expected {}, got {}: {msg}", status_name(expected as i32), status_name(st as i32)));
        }
        for n in names {
            if !msg.contains(n) {
                self.failures.push(format!("[{class}] {input} ({entry}): message does not name {n:?}: {msg}"));
            }
        }
        let excerpt = self.excerpt(&msg);
        self.cases.push(Case { class, input, entry, expected: status_name(expected as i32), actual: status_name(st as i32), excerpt });
    }

    /// Record a case whose outcome is not a status (a subprocess that crashed, ...).
    pub fn record_raw(&mut self, class: &'static str, input: impl Into<String>, entry: &'static str, expected: &str, actual: &str, excerpt: &str) {
        let excerpt = self.excerpt(excerpt);
        self.cases.push(Case { class, input: input.into(), entry, expected: expected.to_string(), actual: actual.to_string(), excerpt });
    }

    /// Assert something that is not a table row (data values, guard bytes, ...).
    pub fn ensure(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.failures.push(what());
        }
    }

    /// A message shortened to what is stable across machines and runs: temporary paths
    /// replaced by `<tmp>`, libhdf5's error stack reduced to its innermost frame's description
    /// (no source file names or line numbers), at most 220 characters.
    pub fn excerpt(&self, msg: &str) -> String {
        let mut m = msg.to_string();
        for p in &self.tmp_prefixes {
            m = m.replace(p.as_str(), "<tmp>");
        }
        for (a, b) in &self.replace {
            m = m.replace(a.as_str(), b);
        }
        let mut out = String::new();
        let mut rest = m.as_str();
        while let Some(k) = rest.find("; libhdf5 error stack:") {
            out.push_str(&rest[..k]);
            let stack = &rest[k + "; libhdf5 error stack:".len()..];
            // Frames are "\n  #NNN: file:line in func(): desc [major: minor]"; the stack
            // ends at the first line that is not a frame.
            let mut innermost = "";
            let mut consumed = 0;
            for line in stack.split_inclusive('\n') {
                let t = line.trim();
                if t.is_empty() || t.starts_with('#') {
                    if let Some(p) = t.find("(): ") {
                        innermost = &t[p + 4..];
                    }
                    consumed += line.len();
                } else {
                    break;
                }
            }
            let innermost = innermost.split(" [").next().unwrap_or("").trim();
            out.push_str(&format!(" [libhdf5: {innermost}]"));
            rest = &stack[consumed..];
        }
        out.push_str(rest);
        let one: String = out.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut cut = one.len().min(220);
        while !one.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut e = one[..cut].to_string();
        if cut < one.len() {
            e.push('…');
        }
        e.replace('|', "\\|")
    }

    /// The markdown table.
    pub fn render(&self) -> String {
        let mut s = String::from("| # | class | input | entry point | expected | actual | message excerpt |\n|---|---|---|---|---|---|---|\n");
        for (k, c) in self.cases.iter().enumerate() {
            s.push_str(&format!("| {} | {} | {} | `{}` | {} | {} | {} |\n", k + 1, c.class, c.input, c.entry, c.expected, c.actual, c.excerpt));
        }
        s
    }
}

/// A buffer of `len` usable bytes between two guard zones; `fill` is the initial content.
pub struct Guarded {
    pub buf: Vec<u8>,
    pub len: usize,
    fill: u8,
}

pub const GUARD: usize = 64;
pub const GUARD_BYTE: u8 = 0xE7;

impl Guarded {
    pub fn new(len: usize, fill: u8) -> Guarded {
        let mut buf = vec![GUARD_BYTE; len + 2 * GUARD];
        buf[GUARD..GUARD + len].fill(fill);
        Guarded { buf, len, fill }
    }
    pub fn ptr(&mut self) -> *mut u8 {
        self.buf[GUARD..].as_mut_ptr()
    }
    pub fn body(&self) -> &[u8] {
        &self.buf[GUARD..GUARD + self.len]
    }
    pub fn guards_intact(&self) -> bool {
        self.buf[..GUARD].iter().all(|&b| b == GUARD_BYTE) && self.buf[GUARD + self.len..].iter().all(|&b| b == GUARD_BYTE)
    }
    pub fn untouched(&self) -> bool {
        self.guards_intact() && self.body().iter().all(|&b| b == self.fill)
    }
}

/// Overwrite bytes of a file in place.
pub fn patch(path: &Path, at: u64, bytes: &[u8]) {
    use std::io::{Seek, SeekFrom, Write};
    let mut fh = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    fh.seek(SeekFrom::Start(at)).unwrap();
    fh.write_all(bytes).unwrap();
}

/// XOR one byte of a file with `mask`.
pub fn flip(path: &Path, at: u64, mask: u8) {
    let b = std::fs::read(path).unwrap();
    patch(path, at, &[b[at as usize] ^ mask]);
}

/// Offset of the first occurrence of `needle` in `hay` at or after `from`.
pub fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|p| p + from)
}

/// f64 values of native-order bytes.
pub fn f64s(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect()
}
