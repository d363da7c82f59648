//! `vh5 read`: run many-slice reads with checksums and timing. Uses the Rust API (not the C
//! ABI). Slice table format: [`crate::table`].

use std::time::Instant;

use vh5::dtype::Dtype;
use vh5::error::{Error, Result};
use vh5::geometry::table::row_counts;
use vh5::hdf5 as h5;
use vh5::transfer::options::{self, PlannerMode};
use vh5::transfer::{read_many_slices, ArrayLayout, DstArray, SliceTable, SLICES_CLIP};

use crate::fail;
use crate::table::Table;

/// An `InvalidArgument` error (the CLI's bad-option error).
fn invalid(m: String) -> Error {
    Error::new(vh5::error::ErrorKind::InvalidArgument, m)
}

/// The physical memory of this machine in bytes (`sysconf(_SC_PHYS_PAGES) * page size`), or
/// None when the platform does not say. The CLI refuses a table or destination larger than
/// this before allocating: it would be filled, so it could never fit.
fn physical_memory() -> Option<u64> {
    // SAFETY: sysconf only reads system configuration; it has no memory-safety preconditions.
    let (pages, page) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    (pages > 0 && page > 0).then(|| (pages as u64).saturating_mul(page as u64))
}

/// `n * size` bytes, refused with `VH5_ERR_NO_MEMORY` naming option `what` when the product
/// overflows 64 bits or exceeds the physical memory.
fn check_fits(n: u64, size: u64, what: &str) -> Result<u64> {
    let too_big = |bytes: String, why: &str| Error::new(vh5::error::ErrorKind::NoMemory, format!("{what} needs {bytes} bytes of memory, {why}; use a smaller {what}"));
    let bytes = n.checked_mul(size).ok_or_else(|| too_big(format!("{n} x {size}"), "which overflows 64 bits"))?;
    match physical_memory() {
        Some(phys) if bytes > phys => Err(too_big(bytes.to_string(), &format!("more than this machine's {phys} bytes of physical memory"))),
        _ => Ok(bytes),
    }
}

/// A zeroed `Vec<T>` of `n` elements for `what` (an option name), refused with
/// `VH5_ERR_NO_MEMORY` naming `what` and the bytes when `n * size_of::<T>()` overflows,
/// exceeds the physical memory, or the allocation fails (never an abort or an OOM kill
/// from this allocation).
pub fn try_alloc<T: Clone + Default>(n: u64, what: &str) -> Result<Vec<T>> {
    let bytes = check_fits(n, std::mem::size_of::<T>() as u64, what)?;
    let too_big = |bytes: String, why: &str| Error::new(vh5::error::ErrorKind::NoMemory, format!("{what} needs {bytes} bytes of memory, {why}; use a smaller {what}"));
    let len = usize::try_from(n).map_err(|_| too_big(bytes.to_string(), "more than the address space"))?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|e| too_big(bytes.to_string(), &format!("and the allocation failed ({e})")))?;
    v.resize(len, T::default());
    Ok(v)
}

/// The value of option `opt` as a non-negative integer, or a usage error saying what `opt`
/// expects (`what`) and what it got.
fn count_arg<T: std::str::FromStr>(opt: &str, v: &str, what: &str) -> std::result::Result<T, String> {
    v.trim().parse().map_err(|_| format!("{opt} expects a non-negative integer ({what}), got {v:?}"))
}

fn parse_list(s: Option<&String>) -> Option<Vec<u64>> {
    s?.split(',').map(|x| x.trim().parse().ok()).collect()
}

/// `vh5 read --help` (stdout, exit 0; on stderr with exit 2 after a usage error).
pub const READ_HELP_HEAD: &str = "usage: vh5 read FILE DATASET (--table ROWS.csv | --random N --size A,B,..) [--seed S] [--clip]
                [--save OUT.npy] [--show K] [--repeat R] [--planner MODE] [--allow-external]
  Read many slices of DATASET into a new C-order array (just large enough for every row;
  with --clip, for every row as clipped to the dataset),
  print the first rows, a summary, a checksum (sum and FNV-1a 64 of the bytes) and the time.
  A 0-d (scalar) dataset is read without --table, --random and --size (one row); a dataset
  with a null dataspace (H5S_NULL, h5py.Empty) holds no elements and is refused.
  DATASET is written as `vh5 info` lists it: a byte of the name that is not UTF-8 or of a
  control character as \\xNN (`/temp\\xe9rature` for Latin-1 bytes, `/a\\x0ab` for a
  newline), a backslash as \\\\.
  --table ROWS.csv  slice table file, one row per line (format below)
  --random N        N random in-bounds rows of --size elements, stacked along axis 0 of the
                    destination
  --size A,B,..     elements per axis of each random row, each >= 1 (one value applies to
                    every axis, clipped to each extent); N x size must fit in memory
  --seed S          seed of the random rows (default 1)
  --clip            versioned-hdf5 semantics (clip counts, skip empty rows) instead of errors
  --save OUT.npy    write the destination array as a .npy file (created, or its path
                    refused, before the read)
  --show K          print the first K rows of the table (default 3)
  --repeat R        read the table R times on the same open dataset (default 1): the time
                    line gives the first and the best call, the summary is the last call's
                    (chunks served by the decoded-chunk cache show from the second call on)
  --planner MODE    the read strategy: auto (per call and chunk, whichever vh5's cost model
                    predicts faster), chunks (every chunk touched read whole once) or rows
                    (one H5Dread per row); default: env VH5_PLANNER, else auto. Results are
                    identical in every mode
  --allow-external  read a dataset whose data lives in other files (external storage,
                    virtual datasets, external links); refused by default: a crafted file
                    could make vh5 read any file the process may read
  -h, --help        this help
  Summary: the planner mode and thread count used; rows read / skipped (count 0, or clipped
  to nothing by --clip), elements copied; chunks read whole once (of them, raw chunks
  decoded by vh5), hyperslab reads by libhdf5 (row pieces, or rows in order when
  destinations overlap), rows libhdf5 read straight into the destination; chunks served by the dataset's decoded-chunk cache (hits) and chunks it
  lacked (misses, counted only where the call consults the cache).
";

struct ReadOpts {
    path: String,
    /// The name read, in the escaped form `vh5 info` prints ([`vh5::names::escape`] of
    /// `dataset_bytes`), for messages and the summary line: `\x41` given prints as `A`.
    dataset: String,
    /// Its bytes ([`vh5::names::unescape`]), what is opened.
    dataset_bytes: Vec<u8>,
    table: Option<String>,
    random: Option<usize>,
    size: Vec<u64>,
    seed: u64,
    clip: bool,
    save: Option<String>,
    show: usize,
    /// `--repeat R`: calls on the same open dataset (>= 1).
    repeat: usize,
    /// `--allow-external`: the file is opened with `FILE_ALLOW_EXTERNAL`.
    allow_external: bool,
    /// `--planner MODE`: the read strategy (`None`: env `VH5_PLANNER`, else auto).
    planner: Option<PlannerMode>,
}

fn parse_read(args: &[String]) -> std::result::Result<ReadOpts, String> {
    let mut pos = Vec::new();
    let mut o = ReadOpts {
        path: String::new(),
        dataset: String::new(),
        dataset_bytes: vec![],
        table: None,
        random: None,
        size: vec![],
        seed: 1,
        clip: false,
        save: None,
        show: 3,
        repeat: 1,
        allow_external: false,
        planner: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--table" => o.table = Some(val()?),
            "--random" => o.random = Some(count_arg(a, &val()?, "a number of rows")?),
            "--size" => o.size = parse_list(Some(&val()?)).ok_or("--size: comma-separated integers")?,
            "--seed" => o.seed = count_arg(a, &val()?, "a seed")?,
            "--save" => o.save = Some(val()?),
            "--show" => o.show = count_arg(a, &val()?, "the number of table rows to print; 0 prints none")?,
            "--repeat" => o.repeat = count_arg(a, &val()?, "a number of calls >= 1")?,
            "--clip" => o.clip = true,
            "--planner" => {
                let v = val()?;
                o.planner = Some(PlannerMode::parse(&v).ok_or_else(|| format!("--planner {v:?}: one of auto, chunks, rows"))?);
            }
            "--allow-external" => o.allow_external = true,
            x if x.starts_with("--") => return Err(format!("unknown option {x}")),
            x => pos.push(x.to_string()),
        }
    }
    let [path, dataset] = <[String; 2]>::try_from(pos).map_err(|_| "expected FILE and DATASET".to_string())?;
    o.path = path;
    o.dataset_bytes = vh5::names::unescape(&dataset).map_err(|e| format!("DATASET {e}"))?;
    o.dataset = vh5::names::escape(&o.dataset_bytes);
    if o.table.is_some() && o.random.is_some() {
        return Err("give exactly one of --table or --random".into());
    }
    if o.random.is_some() && o.size.is_empty() {
        return Err("--random needs --size A,B,.. (elements per axis, each >= 1)".into());
    }
    if o.repeat == 0 {
        return Err("--repeat 0: give a number of calls >= 1".into());
    }
    if o.size.contains(&0) {
        return Err(format!("--size {}: every size must be >= 1 (elements per axis)", o.size.iter().map(u64::to_string).collect::<Vec<_>>().join(",")));
    }
    Ok(o)
}

/// `vh5 read FILE DATASET ...`: read a slice table into a new C-order array and print rows,
/// elements, a checksum (sum and FNV-1a 64 hash of the destination bytes) and timing.
pub fn run_read(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{READ_HELP_HEAD}{}", crate::table::FORMAT_HELP);
        return 0;
    }
    let o = match parse_read(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("vh5 read: {e}");
            eprintln!("{READ_HELP_HEAD}{}", crate::table::FORMAT_HELP);
            return 2;
        }
    };
    if o.planner.is_some() {
        options::set_planner(o.planner);
    }
    match read(&o) {
        Ok(()) => 0,
        Err(e) => fail(&e),
    }
}

fn load_table(path: &str, ndim: usize) -> Result<Table> {
    let text = std::fs::read_to_string(path).map_err(|e| err_io(format!("cannot read {path}: {e}")))?;
    crate::table::parse(path, &text, ndim)
}

fn err_io(m: String) -> Error {
    Error::new(vh5::error::ErrorKind::Io, m)
}

fn random_table(shape: &[u64], size: &[u64], n: usize, seed: u64, itemsize: usize) -> Result<Table> {
    // A single value applies to every axis (`--size 4` on a 3-d dataset means 4,4,4),
    // clipped to each extent so it fits any dataset.
    let broadcast: Vec<u64>;
    let size = if size.len() == 1 && shape.len() > 1 {
        broadcast = shape.iter().map(|&e| size[0].min(e.max(1))).collect();
        &broadcast[..]
    } else {
        size
    };
    if size.len() != shape.len() {
        return Err(Error::new(vh5::error::ErrorKind::InvalidArgument, format!("--size has {} values, the dataset {} axes", size.len(), shape.len())));
    }
    if let Some(j) = size.iter().position(|&s| s == 0) {
        return Err(invalid(format!("--size {size:?}: axis {j} is 0; every size must be >= 1 (elements per axis)")));
    }
    if size.iter().zip(shape).any(|(s, e)| s > e) {
        return Err(invalid(format!("--size {size:?} does not fit the dataset shape {shape:?}")));
    }
    // Rows are stacked along axis 0 of the destination: its extent n * size[0] must exist.
    let nd = shape.len() as u64;
    let rows = n as u64;
    if shape.is_empty() {
        return Err(invalid("--random needs a dataset with at least one axis".into()));
    }
    // The destination (n * size[0], size[1], ..) x itemsize bytes, checked before the tables.
    let dst_elems = size[1..].iter().try_fold(rows.checked_mul(size[0]), |a, &e| Some(a?.checked_mul(e)));
    let dst_elems = dst_elems.flatten().ok_or_else(|| {
        Error::new(vh5::error::ErrorKind::NoMemory, format!("--random {n} x --size {size:?}: the destination overflows 64 bits; use a smaller --random or --size"))
    })?;
    check_fits(dst_elems, itemsize as u64, "--random/--size")?;
    // Three columns of n x ndim u64 values, allocated fallibly before anything is filled.
    let cells = rows.checked_mul(nd).ok_or_else(|| invalid(format!("--random {n} x {nd} axes overflows 64 bits")))?;
    let mut t = Table { n, ..Default::default() };
    for c in 0..3 {
        t.cols[c] = try_alloc::<u64>(cells, "--random")?;
    }
    let mut x = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    for i in 0..n {
        for j in 0..shape.len() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = i * shape.len() + j;
            t.cols[0][k] = x % (shape[j] - size[j] + 1);
            t.cols[1][k] = if j == 0 { i as u64 * size[0] } else { 0 };
            t.cols[2][k] = size[j];
        }
    }
    Ok(t)
}

/// The destination of `vh5 read`: just large enough for every row, along each axis the
/// largest `dst_start + (count - 1) * dst_step + 1` of the rows. With `clip` each row's counts
/// are first clipped to the dataset `shape` as the read clips them (the library's own
/// [`row_counts`], the destination side unbounded), and rows clipped to nothing add nothing.
///
/// Every row is checked against the dataset first (without `clip`, a row reaching past it is
/// `OutOfBounds` naming the row, as the read would say), so a count such as 2^64 - 1 is an
/// error about that row, not a destination too large to allocate.
fn dest_shape(t: &SliceTable, shape: &[u64], clip: bool) -> Result<Vec<u64>> {
    let n = t.ndim;
    let unbounded = vec![u64::MAX; n];
    let mut count = vec![0u64; n];
    let mut dshape = vec![0u64; n];
    for i in 0..t.nslices {
        let base = i * n;
        if !row_counts(t, i, shape, &unbounded, clip, ["dataset", "destination"], &mut count)? {
            continue;
        }
        for (j, d) in dshape.iter_mut().enumerate() {
            let step = t.dst_step.map_or(1, |s| s[base + j]);
            // checked by row_counts to stay below u64::MAX (the unbounded destination extent)
            let end = t.dst_start[base + j].saturating_add((count[j] - 1).saturating_mul(step)).saturating_add(1);
            *d = (*d).max(end);
        }
    }
    Ok(dshape)
}

/// The `--save` file, opened (created when missing, not yet truncated) before the read so a
/// path that cannot be written fails at once; a file it created is removed again when the
/// command fails before writing it.
struct SaveTarget<'a> {
    path: &'a str,
    file: Option<std::fs::File>,
    created: bool,
}

impl<'a> SaveTarget<'a> {
    fn open(path: &'a str) -> Result<SaveTarget<'a>> {
        let created = !std::path::Path::new(path).exists();
        let file = std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(path);
        let file = file.map_err(|e| err_io(format!("--save {path}: cannot create the file: {e} (checked before reading)")))?;
        Ok(SaveTarget { path, file: Some(file), created })
    }

    /// Write the destination as a .npy file, replacing what the file held.
    fn write(mut self, d: Dtype, itemsize: usize, shape: &[u64], data: &[u8]) -> Result<()> {
        let file = self.file.take().expect("written once");
        write_npy(file, self.path, d, itemsize, shape, data)
    }
}

impl Drop for SaveTarget<'_> {
    fn drop(&mut self) {
        if self.file.take().is_some() && self.created {
            let _ = std::fs::remove_file(self.path);
        }
    }
}

fn read(o: &ReadOpts) -> Result<()> {
    let save = o.save.as_deref().map(SaveTarget::open).transpose()?;
    let s = h5::session();
    let l = s.lock();
    let flags = if o.allow_external { h5::external::FILE_ALLOW_EXTERNAL } else { 0 };
    let f = h5::open_file(l, &o.path, flags)?;
    let d = h5::open_dataset(l, f.id(), &o.dataset_bytes)?;
    let info = h5::dataset_info(l, d.id())?;
    let Some(dtype) = info.dtype.dtype else {
        return Err(Error::new(vh5::error::ErrorKind::Unsupported, format!("dataset {}: type not supported ({})", o.dataset, info.dtype.description)));
    };
    if info.null_dataspace {
        // ndim 0 as for a scalar, but no element at all: say so before judging the options
        return Err(Error::new(vh5::error::ErrorKind::Unsupported, format!("dataset {} has a null dataspace (H5S_NULL, h5py.Empty): it holds no elements to read", o.dataset)));
    }
    let n = info.shape.len();
    let t = match (&o.table, o.random) {
        (Some(_), _) if n == 0 => return Err(invalid(format!("--table: dataset {} is 0-d (a scalar): read it without --table", o.dataset))),
        (None, Some(_)) if n == 0 => return Err(invalid(format!("--random: dataset {} is 0-d (a scalar): read it without --random and --size", o.dataset))),
        (None, None) if n == 0 => Table { n: 1, ..Default::default() }, // one row, no columns
        (Some(p), _) => load_table(p, n)?,
        (None, Some(k)) => random_table(&info.shape, &o.size, k, o.seed, info.dtype.mem_itemsize)?,
        (None, None) => return Err(invalid(format!("give --table ROWS.csv or --random N --size A,B,.. (dataset {} has {} axes)", o.dataset, n))),
    };
    let table = SliceTable::new(n, t.n, &t.cols[0], &t.cols[1], &t.cols[2], t.steps.then_some(&t.cols[3][..]), t.steps.then_some(&t.cols[4][..]))?;
    let dshape = dest_shape(&table, &info.shape, o.clip)?;
    let itemsize = info.dtype.mem_itemsize;
    // The option that sized the destination, named when it cannot be allocated.
    let what = if o.table.is_some() { "--table" } else { "--random/--size" };
    let elems = dshape.iter().try_fold(1u64, |a, &e| a.checked_mul(e));
    let nbytes = elems.and_then(|e| e.checked_mul(itemsize as u64)).ok_or_else(|| {
        Error::new(vh5::error::ErrorKind::NoMemory, format!("{what}: the destination {dshape:?} x {itemsize} bytes overflows 64 bits; use fewer or smaller rows"))
    })?;
    let mut buf = try_alloc::<u8>(nbytes, what)?;
    let bytes = buf.len();
    let strides = ArrayLayout::c_strides(&dshape, itemsize).ok_or_else(|| invalid(format!("{what}: destination {dshape:?} too large")))?;
    if let (Some(p), Some(line)) = (&o.table, t.header_line) {
        println!("{p} line {line}: skipped as a header (no field is a number, every field is a name)");
    }
    for i in 0..t.n.min(o.show) {
        let r = |c: usize| &t.cols[c][i * n..(i + 1) * n];
        if t.steps {
            println!("row {i}: src {:?} step {:?} -> dst {:?} step {:?}, count {:?}", r(0), r(3), r(1), r(4), r(2));
        } else {
            println!("row {i}: src {:?} -> dst {:?}, count {:?}", r(0), r(1), r(2));
        }
    }
    let mut dst = DstArray { buf: &mut buf, layout: ArrayLayout { shape: dshape.clone(), strides, offset: 0, base_len: bytes, itemsize }, dtype };
    let flags = if o.clip { SLICES_CLIP } else { 0 };
    let (mut first, mut best) = (None, std::time::Duration::MAX);
    let mut stats = Default::default();
    for _ in 0..o.repeat {
        let t0 = Instant::now();
        stats = read_many_slices(d.id(), &mut dst, &table, flags)?;
        let dt = t0.elapsed();
        first.get_or_insert(dt);
        best = best.min(dt);
    }
    print_summary(o, &info, &dshape, &stats, dtype, &buf);
    let us_row = |dt: std::time::Duration| dt.as_secs_f64() * 1e6 / (t.n.max(1) as f64);
    let first = first.expect("at least one call");
    if o.repeat == 1 {
        println!("time {:.3} ms ({:.2} us/row)", first.as_secs_f64() * 1e3, us_row(first));
    } else {
        println!(
            "time first call {:.3} ms ({:.2} us/row); best of {} calls {:.3} ms ({:.2} us/row)",
            first.as_secs_f64() * 1e3,
            us_row(first),
            o.repeat,
            best.as_secs_f64() * 1e3,
            us_row(best)
        );
    }
    if let Some(t) = save {
        t.write(dtype, itemsize, &dshape, &buf)?;
        println!("saved {}", o.save.as_deref().unwrap_or_default());
    }
    Ok(())
}

/// The summary lines of `vh5 read`: dataset, rows, storage (of the last call), checksum.
fn print_summary(o: &ReadOpts, info: &h5::DatasetInfo, dshape: &[u64], stats: &vh5::transfer::ReadStats, dtype: Dtype, buf: &[u8]) {
    let (sum, _) = if dtype == Dtype::Opaque { (String::from("n/a (opaque)"), 0) } else { sum_elements(dtype, buf) };
    println!("dataset {} {:?} {}; destination {:?}", o.dataset, info.shape, info.dtype.description, dshape);
    println!("strategy: planner {}, {}", options::planner_mode().name(), crate::plural(options::num_threads(), "thread"));
    println!("rows: {} read, {} skipped (count 0, or clipped to nothing by --clip); {} copied", stats.rows_read, stats.rows_skipped, crate::plural(stats.elements, "element"));
    println!(
        "storage: {} read whole once ({} of them raw, decoded by vh5); {} by libhdf5; {} by libhdf5 straight into the destination; chunk cache: {} hits, {} misses",
        crate::plural(stats.chunks_read, "chunk"),
        stats.raw_chunks,
        crate::plural(stats.hdf5_reads, "hyperslab read"),
        crate::plural(stats.direct_reads, "row read"),
        stats.cache_hits,
        stats.cache_misses
    );
    println!("checksum: sum {sum}, fnv1a64 {:016x}", fnv1a(buf));
}

fn fnv1a(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf29ce484222325u64, |h, &x| (h ^ x as u64).wrapping_mul(0x100000001b3))
}

fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = ((h >> 10) & 0x1f) as i32;
    let m = (h & 0x3ff) as f64;
    sign * match e {
        0 => m * 2f64.powi(-24),
        31 => {
            if m == 0.0 {
                f64::INFINITY
            } else {
                f64::NAN
            }
        }
        _ => (1.0 + m / 1024.0) * 2f64.powi(e - 15),
    }
}

/// Sum of the native-order elements of `b` as text (complex: real and imaginary sums).
pub fn sum_elements(d: Dtype, b: &[u8]) -> (String, usize) {
    let size = d.itemsize().unwrap_or(1);
    let mut re = 0f64;
    let mut im = 0f64;
    for e in b.chunks_exact(size) {
        let v = |k: usize, w: usize| -> [u8; 8] {
            let mut a = [0u8; 8];
            a[..w].copy_from_slice(&e[k..k + w]);
            a
        };
        match d {
            Dtype::Bool | Dtype::UInt8 => re += e[0] as f64,
            Dtype::Int8 => re += e[0] as i8 as f64,
            Dtype::Int16 => re += i16::from_ne_bytes([e[0], e[1]]) as f64,
            Dtype::UInt16 => re += u16::from_ne_bytes([e[0], e[1]]) as f64,
            Dtype::Int32 => re += i32::from_ne_bytes(e.try_into().unwrap()) as f64,
            Dtype::UInt32 => re += u32::from_ne_bytes(e.try_into().unwrap()) as f64,
            Dtype::Int64 => re += i64::from_ne_bytes(e.try_into().unwrap()) as f64,
            Dtype::UInt64 => re += u64::from_ne_bytes(e.try_into().unwrap()) as f64,
            Dtype::Float16 => re += f16_to_f64(u16::from_ne_bytes([e[0], e[1]])),
            Dtype::Float32 => re += f32::from_ne_bytes(e.try_into().unwrap()) as f64,
            Dtype::Float64 => re += f64::from_ne_bytes(e.try_into().unwrap()),
            Dtype::Complex64 => {
                re += f32::from_ne_bytes(e[..4].try_into().unwrap()) as f64;
                im += f32::from_ne_bytes(e[4..].try_into().unwrap()) as f64;
            }
            Dtype::Complex128 => {
                re += f64::from_ne_bytes(v(0, 8));
                im += f64::from_ne_bytes(v(8, 8));
            }
            Dtype::Opaque => {}
        }
    }
    let s = if matches!(d, Dtype::Complex64 | Dtype::Complex128) { format!("{re:?}{im:+?}j") } else { format!("{re:?}") };
    (s, b.len() / size)
}

/// Write a .npy file (format version 1.0: magic, header dict padded to 64 bytes, C-order data)
/// into `file` (opened for writing; truncated first), `path` naming it in errors.
fn write_npy(mut file: std::fs::File, path: &str, d: Dtype, itemsize: usize, shape: &[u64], data: &[u8]) -> Result<()> {
    let e = if cfg!(target_endian = "little") { '<' } else { '>' };
    let descr = match d {
        Dtype::Bool => "|b1".to_string(),
        Dtype::Int8 => "|i1".into(),
        Dtype::UInt8 => "|u1".into(),
        Dtype::Opaque => format!("|V{itemsize}"),
        _ => format!("{e}{}{}", d.kind(), itemsize),
    };
    let dims: Vec<String> = shape.iter().map(|x| x.to_string()).collect();
    let shape_txt = if shape.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_txt}, }}");
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + data.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    use std::io::Write;
    file.set_len(0).and_then(|()| file.write_all(&out)).map_err(|e| err_io(format!("cannot write {path}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_is_aligned_and_f16_decodes() {
        let dir = std::env::temp_dir().join(format!("vh5-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.npy");
        std::fs::write(&p, [7u8; 4096]).unwrap(); // longer than the .npy: truncated
        write_npy(std::fs::OpenOptions::new().write(true).open(&p).unwrap(), p.to_str().unwrap(), Dtype::Float64, 8, &[2, 3], &[0u8; 48]).unwrap();
        let b = std::fs::read(&p).unwrap();
        let hl = u16::from_le_bytes([b[8], b[9]]) as usize;
        assert_eq!((10 + hl) % 64, 0);
        assert!(std::str::from_utf8(&b[10..10 + hl]).unwrap().contains("'shape': (2, 3)"));
        assert_eq!(b.len(), 10 + hl + 48);
        assert_eq!(f16_to_f64(0x3E00), 1.5);
        assert_eq!(f16_to_f64(0xC000), -2.0);
        assert_eq!(fnv1a(b""), 0xcbf29ce484222325);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn random_table_refuses_sizes_that_cannot_be_allocated_before_allocating() {
        let shape = [12u64, 64, 128];
        // the trial's `--random 100000000000 --size 4`: refused, no allocation attempted
        let e = random_table(&shape, &[4], 100_000_000_000, 1, 8).err().unwrap();
        assert_eq!(e.kind, vh5::error::ErrorKind::NoMemory);
        assert!(e.message.contains("--random") && e.message.contains("51200000000000 bytes"), "{}", e.message);
        // overflowing 64 bits
        let e = random_table(&shape, &[4], usize::MAX, 1, 8).err().unwrap();
        assert!(e.kind == vh5::error::ErrorKind::NoMemory && e.message.contains("overflows 64 bits"), "{}", e.message);
        // size 0 names the rule, not the shape
        let e = random_table(&shape, &[0], 3, 1, 8).err().unwrap();
        assert!(e.message.contains(">= 1") && !e.message.contains("does not fit"), "{}", e.message);
        let e = random_table(&shape, &[2, 0, 2], 3, 1, 8).err().unwrap();
        assert!(e.message.contains("axis 1 is 0"), "{}", e.message);
        // a reasonable table: in bounds, stacked along axis 0
        let t = random_table(&shape, &[4], 5, 7, 8).unwrap();
        assert_eq!((t.n, t.cols[0].len(), t.cols[2].len()), (5, 15, 15));
        for i in 0..5 {
            assert_eq!(&t.cols[1][i * 3..i * 3 + 3], &[i as u64 * 4, 0, 0]);
            assert_eq!(&t.cols[2][i * 3..i * 3 + 3], &[4, 4, 4]);
            for (j, &e) in shape.iter().enumerate() {
                assert!(t.cols[0][i * 3 + j] + 4 <= e);
            }
        }
    }

    #[test]
    fn try_alloc_is_fallible_and_zeroed() {
        let e = try_alloc::<u64>(u64::MAX / 4, "--x").err().unwrap();
        assert!(e.kind == vh5::error::ErrorKind::NoMemory && e.message.contains("--x") && e.message.contains("overflows"), "{}", e.message);
        if let Some(phys) = physical_memory() {
            let e = try_alloc::<u8>(phys + 1, "--y").err().unwrap();
            assert!(e.message.contains("--y") && e.message.contains("physical memory"), "{}", e.message);
        }
        assert_eq!(try_alloc::<u64>(3, "--z").unwrap(), vec![0u64; 3]);
    }

    #[test]
    fn parse_read_refuses_size_zero_and_random_without_size() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let e = parse_read(&args(&["f.h5", "d", "--random", "3", "--size", "0"])).err().unwrap();
        assert_eq!(e, "--size 0: every size must be >= 1 (elements per axis)");
        let e = parse_read(&args(&["f.h5", "d", "--random", "3"])).err().unwrap();
        assert!(e.contains("--random needs --size"), "{e}");
        assert!(parse_read(&args(&["f.h5", "d", "--random", "3", "--size", "1,2"])).is_ok());
    }
}
