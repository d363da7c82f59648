//! Memory bounds of the payload decoder, measured with a counting global allocator: skipping
//! an unknown CBOR key costs O(1) memory per nesting level (up to PAYLOAD_MAX_DEPTH), never
//! memory proportional to the input. This binary holds only these tests, so the allocator's
//! peak is not disturbed by other threads' work (they run one at a time under a lock).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use vh5::error::ErrorKind;
use vh5::payload::{copy_data, decode_count, decode_view};

struct Counting;
static CUR: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static SERIAL: Mutex<()> = Mutex::new(());

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            let now = CUR.fetch_add(l.size(), Ordering::SeqCst) + l.size();
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        CUR.fetch_sub(l.size(), Ordering::SeqCst);
    }
}

#[global_allocator]
static A: Counting = Counting;

/// Bytes allocated at the peak of `f` beyond what was live when it started.
fn peak_extra<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = CUR.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let r = f();
    (r, PEAK.load(Ordering::SeqCst) - base)
}

/// `{"bytes": h'00', "dtype": "uint8", "zz": <value>}`
fn with_unknown_key(value: &[u8]) -> Vec<u8> {
    let mut m = b"\xa3\x65bytes\x41\x00\x65dtype\x65uint8\x62zz".to_vec();
    m.extend_from_slice(value);
    m
}

/// The value that made minicbor's skip keep a 16-byte heap entry per input byte:
/// indefinite arrays each first in a definite 2-array, `[[_ [[_ ... ], 0]], 0]`, `levels`
/// deep (closed when `closed`), repeated `reps` times inside one outer definite array.
fn alternating(levels: usize, reps: usize, closed: bool) -> Vec<u8> {
    let mut one = Vec::new();
    for i in 0..levels {
        one.push(if i % 2 == 0 { 0x82 } else { 0x9f });
    }
    one.push(0x00);
    if closed {
        for i in (0..levels).rev() {
            one.push(if i % 2 == 0 { 0x00 } else { 0xff });
        }
    }
    let mut v = vec![0x9a];
    v.extend_from_slice(&(reps as u32).to_be_bytes());
    for _ in 0..reps {
        v.extend_from_slice(&one);
    }
    v
}

/// Issue: skipping an unknown key whose value nests indefinite-length arrays inside definite
/// ones held ~16x the input on the heap (a 64 MB message: +1 GB RSS; under `ulimit -v`, an
/// abort). Now the skip walks with a fixed stack: a multi-megabyte value within the depth
/// limit decodes with no allocation proportional to it, and a value nested deeper than
/// PAYLOAD_MAX_DEPTH is refused as Unsupported, naming the byte, also without allocating.
#[test]
fn cbor_unknown_key_nested_indefinite_skip_memory_bounded() {
    let _g = SERIAL.lock().unwrap();
    // 63 levels (within the limit of 64 with the outer array), 60,000 times: ~7.6 MB.
    let msg = with_unknown_key(&alternating(63, 60_000, true));
    assert!(msg.len() > 5_000_000);
    let (v, extra) = peak_extra(|| decode_view(&msg, 0).map(|v| (v.data.len(), v.data_offset)));
    assert_eq!(v.unwrap(), (1, 8));
    assert!(extra < 4096, "decode_view allocated {extra} bytes at its peak for a {}-byte message", msg.len());
    let (r, extra) = peak_extra(|| copy_data(&msg, &mut [0u8; 1]));
    assert_eq!(r.unwrap(), 1);
    assert!(extra < 4096, "copy_data allocated {extra} bytes");

    // Nested 4,000,000 levels deep (the shape of the original report): refused at level 65.
    let deep = alternating(4_000_000, 1, false);
    let msg = with_unknown_key(&deep);
    let (r, extra) = peak_extra(|| decode_view(&msg, 0).map(|_| ()));
    assert!(extra < 4096, "decode_view allocated {extra} bytes refusing a {}-byte message", msg.len());
    let e = r.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert!(e.message.contains("value of key \"zz\"") && e.message.contains("nested deeper than 64"), "{}", e.message);
    let (e, extra) = peak_extra(|| decode_count(&msg, &mut [0i64; 1]).unwrap_err());
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert!(extra < 4096, "decode_count allocated {extra} bytes");
}
