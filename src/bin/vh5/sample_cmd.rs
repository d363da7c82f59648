//! `vh5 make-sample`: write the demo's sample file, a float64 dataset `/data` with values
//! sin(i/100) + cos(j/77), gzip level 4 + shuffle.
//!
//! The values are generated and written in tiles of at most [`TILE_ELEMENTS`] elements
//! (hyperslab writes, whole chunks per tile where a chunk fits the tile), so the memory used
//! is bounded by one tile (plus libhdf5's one chunk being compressed), not by the dataset.
//! Before the file is created the shape and chunk are checked: a chunk larger than the shape
//! along an axis, a chunk of 4 GiB or more (libhdf5's limit), a size that overflows 64 bits
//! or exceeds the space free on the target file system are refused with a message naming the
//! option, so no partial file is left behind.

use std::ffi::CString;

use vh5::error::{Error, ErrorKind, Result};
use vh5::hdf5 as h5;

use crate::fail;

/// Elements per tile (8 MiB of float64): the memory the values take, whatever the shape.
pub const TILE_ELEMENTS: u64 = 1 << 20;

/// `vh5 make-sample --help` (stdout, exit 0; on stderr with exit 2 after a usage error).
pub const MAKE_SAMPLE_HELP: &str = "usage: vh5 make-sample FILE [--shape 2000,2000] [--chunk 100,100]
  Write an HDF5 file with a float64 dataset /data, values sin(i/100) + cos(j/77), gzip level 4
  + shuffle (the demo's sample). The values are written in tiles of at most 8 MiB, so memory
  stays bounded whatever the shape; a shape whose 8 bytes per element exceed the space free
  on the file system (or 64 bits) is refused before the file is created.
  --shape A,B   extent of /data (default 2000,2000)
  --chunk A,B   chunk shape, each >= 1 and <= the shape along its axis, under 4 GiB in all
                (default 100,100)
  -h, --help    this help";

fn invalid(m: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, m)
}

fn parse_list(s: Option<&String>) -> Option<Vec<u64>> {
    s?.split(',').map(|x| x.trim().parse().ok()).collect()
}

/// `vh5 make-sample FILE [--shape A,B] [--chunk A,B]`: a float64 dataset `/data` (default
/// 2000x2000, chunks 100x100, gzip level 4 + shuffle) with values sin(i/100) + cos(j/77).
pub fn run_make_sample(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{MAKE_SAMPLE_HELP}");
        return 0;
    }
    let mut path = None;
    let mut shape = vec![2000u64, 2000];
    let mut chunk = vec![100u64, 100];
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--shape" => shape = parse_list(it.next()).unwrap_or_default(),
            "--chunk" => chunk = parse_list(it.next()).unwrap_or_default(),
            p if path.is_none() && !p.starts_with("--") => path = Some(p.to_string()),
            _ => {
                eprintln!("{MAKE_SAMPLE_HELP}");
                return 2;
            }
        }
    }
    let Some(path) = path else {
        eprintln!("{MAKE_SAMPLE_HELP}");
        return 2;
    };
    if shape.len() != 2 || chunk.len() != 2 || chunk.contains(&0) {
        return fail(&invalid("--shape and --chunk take two positive integers".into()));
    }
    match check_sample(&path, &shape, &chunk).and_then(|()| make_sample(&path, &shape, &chunk)) {
        Ok(()) => {
            println!("wrote {path}: /data float64 {shape:?}, chunks {chunk:?}, gzip 4 + shuffle");
            0
        }
        Err(e) => fail(&e),
    }
}

/// Refuse, before anything is created, a chunk larger than the shape along an axis, a chunk
/// of 4 GiB or more, a dataset whose bytes overflow 64 bits or exceed the space free on the
/// file system holding `path`.
fn check_sample(path: &str, shape: &[u64], chunk: &[u64]) -> Result<()> {
    for (j, (&c, &e)) in chunk.iter().zip(shape).enumerate() {
        if c > e {
            return Err(invalid(format!(
                "--chunk {}: the chunk is {c} along axis {j}, larger than the shape's {e} (a chunk must be <= the dataset extent along each axis)",
                list(chunk)
            )));
        }
    }
    let chunk_bytes = chunk[0].checked_mul(chunk[1]).and_then(|n| n.checked_mul(8));
    if chunk_bytes.is_none_or(|b| b >= 1 << 32) {
        return Err(invalid(format!("--chunk {}: a chunk of {} x {} float64 is 4 GiB or more, libhdf5's limit; use a smaller --chunk", list(chunk), chunk[0], chunk[1])));
    }
    let bytes = shape[0]
        .checked_mul(shape[1])
        .and_then(|n| n.checked_mul(8))
        .ok_or_else(|| invalid(format!("--shape {}: {} x {} float64 elements of 8 bytes overflow 64 bits; use a smaller --shape", list(shape), shape[0], shape[1])))?;
    if let Some(free) = free_bytes(path) {
        if bytes > free {
            return Err(Error::new(
                ErrorKind::Io,
                format!("--shape {}: /data needs up to {bytes} bytes (8 per element before compression), more than the {free} bytes free on the file system of {path}; use a smaller --shape", list(shape)),
            ));
        }
    }
    Ok(())
}

fn list(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// The bytes available to this user on the file system that holds (or would hold) `path`
/// (`statvfs` of its directory), or None when that cannot be determined.
fn free_bytes(path: &str) -> Option<u64> {
    let p = std::path::Path::new(path);
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let c = CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: `c` is NUL-terminated; `st` is a plain struct statvfs fills on success.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    (unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0).then(|| (st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// The tile shape (rows, columns) written per call: whole chunks when a chunk holds at most
/// [`TILE_ELEMENTS`], else pieces of chunks; at most [`TILE_ELEMENTS`] elements either way.
pub fn tile_shape(shape: &[u64], chunk: &[u64]) -> (u64, u64) {
    let (cr, cc) = (chunk[0].max(1), chunk[1].max(1));
    let b = TILE_ELEMENTS;
    if cr.saturating_mul(cc) <= b {
        let c = shape[1].min(((b / cr) / cc * cc).max(cc)).max(1);
        let r = shape[0].min(((b / c) / cr * cr).max(cr)).max(1);
        (r, c)
    } else {
        let c = shape[1].clamp(1, b);
        (shape[0].clamp(1, (b / c).max(1)), c)
    }
}

fn make_sample(path: &str, shape: &[u64], chunk: &[u64]) -> Result<()> {
    use hdf5_sys::{h5d::*, h5f::*, h5p::*, h5s::*, h5t::*};
    let (tr, tc) = tile_shape(shape, chunk);
    // One tile, allocated fallibly before the file is created.
    let mut buf = crate::read_cmd::try_alloc::<f64>(tr * tc, "--shape")?;
    let s = h5::session();
    let l = s.lock();
    let c = CString::new(path).map_err(|_| invalid("path contains NUL".into()))?;
    let chk = |r: i64, what: &str| h5::error::check(l, r, what);
    // SAFETY: plain libhdf5 calls with valid arguments under the lock; ids closed by Handle;
    // every hyperslab lies inside the dataset and the memory space matches `buf`'s length.
    unsafe {
        let f = h5::Handle::new(l, H5Fcreate(c.as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), format_args!("creating {path}"))?;
        let sp = h5::Handle::new(l, H5Screate_simple(2, shape.as_ptr(), std::ptr::null()), "H5Screate_simple")?;
        let dcpl = h5::Handle::new(l, H5Pcreate(*H5P_CLS_DATASET_CREATE), "H5Pcreate")?;
        chk(H5Pset_chunk(dcpl.id(), 2, chunk.as_ptr()) as i64, "H5Pset_chunk")?;
        chk(H5Pset_shuffle(dcpl.id()) as i64, "H5Pset_shuffle")?;
        chk(H5Pset_deflate(dcpl.id(), 4) as i64, "H5Pset_deflate")?;
        let d = h5::Handle::new(l, H5Dcreate2(f.id(), c"data".as_ptr(), *H5T_IEEE_F64LE, sp.id(), H5P_DEFAULT, dcpl.id(), H5P_DEFAULT), "H5Dcreate2")?;
        for i0 in (0..shape[0]).step_by(tr as usize) {
            for j0 in (0..shape[1]).step_by(tc as usize) {
                let count = [tr.min(shape[0] - i0), tc.min(shape[1] - j0)];
                let tile = &mut buf[..(count[0] * count[1]) as usize];
                for (k, v) in tile.iter_mut().enumerate() {
                    let (i, j) = (i0 + k as u64 / count[1], j0 + k as u64 % count[1]);
                    *v = (i as f64 / 100.0).sin() + (j as f64 / 77.0).cos();
                }
                let mem = h5::Handle::new(l, H5Screate_simple(2, count.as_ptr(), std::ptr::null()), "H5Screate_simple")?;
                chk(
                    H5Sselect_hyperslab(sp.id(), H5S_seloper_t::H5S_SELECT_SET, [i0, j0].as_ptr(), std::ptr::null(), count.as_ptr(), std::ptr::null()) as i64,
                    "H5Sselect_hyperslab",
                )?;
                chk(H5Dwrite(d.id(), *H5T_NATIVE_DOUBLE, mem.id(), sp.id(), H5P_DEFAULT, tile.as_ptr() as *const _) as i64, "H5Dwrite")?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_are_bounded_and_whole_chunks_when_they_fit() {
        for (shape, chunk) in
            [([2000, 2000], [100, 100]), ([100_000_000_000, 100_000_000_000], [100, 100]), ([10, 10], [10, 10]), ([5, 1 << 40], [1, 1 << 29]), ([1 << 40, 3], [1 << 28, 2])]
        {
            let (r, c) = tile_shape(&shape, &chunk);
            assert!(r >= 1 && c >= 1 && r * c <= TILE_ELEMENTS && r <= shape[0] && c <= shape[1], "{shape:?} {chunk:?}: {r} x {c}");
            if chunk[0] * chunk[1] <= TILE_ELEMENTS {
                assert!((r % chunk[0] == 0 || r == shape[0]) && (c % chunk[1] == 0 || c == shape[1]), "{shape:?} {chunk:?}: {r} x {c}");
            }
        }
        assert_eq!(tile_shape(&[2000, 2000], &[100, 100]), (500, 2000));
    }

    #[test]
    fn chunk_larger_than_shape_or_4_gib_and_overflowing_shapes_are_refused() {
        let e = check_sample("x.h5", &[10, 10], &[20, 20]).err().unwrap();
        assert!(e.kind == ErrorKind::InvalidArgument && e.message.contains("20 along axis 0, larger than the shape's 10"), "{}", e.message);
        let e = check_sample("x.h5", &[10, 100], &[10, 200]).err().unwrap();
        assert!(e.message.contains("along axis 1"), "{}", e.message);
        let e = check_sample("x.h5", &[1 << 20, 1 << 20], &[1 << 15, 1 << 14]).err().unwrap();
        assert!(e.message.contains("4 GiB"), "{}", e.message);
        let e = check_sample("x.h5", &[100_000_000_000, 100_000_000_000], &[100, 100]).err().unwrap();
        assert!(e.message.contains("overflow 64 bits"), "{}", e.message);
        let e = check_sample("x.h5", &[1_000_000_000, 1_000_000_000], &[100, 100]).err().unwrap();
        assert!(e.kind == ErrorKind::Io && e.message.contains("bytes free on the file system of x.h5"), "{}", e.message);
    }
}
