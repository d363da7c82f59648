//! (d) The C ABI itself: `payload_decode_view`, `payload_decode_count`, `payload_copy_data`
//! and `vh5_last_error_message` called with raw pointers, as C would. The input (after a
//! 2-byte header choosing flags and the buffer's alignment) is copied to the END of its own
//! heap allocation, so AddressSanitizer flags any read past `len`; every output buffer sits
//! between guard words that must be untouched afterwards. Asserts: statuses match the safe
//! API, pointers in the view lie inside `buf`, outputs are zeroed on failure, NEEDED sizes
//! are reported on VH5_ERR_BUFFER_TOO_SMALL, nothing is written past any declared capacity.
#![no_main]

use std::mem::{size_of, MaybeUninit};

use libfuzzer_sys::fuzz_target;
use vh5::ffi::payload::*;
use vh5::ffi::vh5_last_error_message;
use vh5::ffi::vh5_status;

const GW: u64 = 0xdead_beef_cafe_f00d;
const GB: u8 = 0xa5;

#[repr(C)]
struct GuardedView {
    pre: [u64; 8],
    v: MaybeUninit<payload_view>,
    post: [u64; 8],
}

/// Allocation of `pad + n` bytes whose last `n` bytes are `data` (exact size: ASan sees
/// every read past the end).
fn place(data: &[u8], pad: usize) -> Box<[u8]> {
    let mut v = vec![0u8; pad + data.len()].into_boxed_slice();
    v[pad..].copy_from_slice(data);
    v
}

fn inside(buf: *const u8, len: usize, p: *const u8, n: usize) -> bool {
    let (b, p) = (buf as usize, p as usize);
    p >= b && p - b + n <= len
}

/// Guarded `u8` output buffer of `cap` bytes: (storage, offset of the first usable byte).
fn guarded_bytes(cap: usize) -> Vec<u8> {
    vec![GB; cap + 32]
}

fn check_bytes_guard(v: &[u8], cap: usize) {
    assert!(v[..16].iter().all(|&g| g == GB), "write before the output buffer");
    assert!(v[16 + cap..].iter().all(|&g| g == GB), "write past the output buffer (cap {cap})");
}

fn last_error() -> String {
    // SAFETY: NULL with cap 0 is allowed.
    let n = unsafe { vh5_last_error_message(std::ptr::null_mut(), 0) };
    let mut b = vec![GB; n + 1 + 16];
    // SAFETY: b holds n+1 writable bytes.
    let m = unsafe { vh5_last_error_message(b.as_mut_ptr().cast(), n + 1) };
    assert_eq!(m, n);
    assert_eq!(b[n], 0, "NUL terminator");
    assert!(b[n + 1..].iter().all(|&g| g == GB));
    // truncated copies: cap 1 and cap n/2
    for cap in [1usize, n / 2 + 1] {
        let mut t = vec![GB; cap + 16];
        // SAFETY: t holds cap writable bytes.
        let m = unsafe { vh5_last_error_message(t.as_mut_ptr().cast(), cap) };
        assert_eq!(m, n);
        // The copy is cut at a UTF-8 character boundary (documented: truncation never splits
        // a character), so it may be shorter than cap - 1.
        let full = std::str::from_utf8(&b[..n]).expect("message is UTF-8");
        let mut k = n.min(cap - 1);
        while !full.is_char_boundary(k) {
            k -= 1;
        }
        assert_eq!(&t[..k], &b[..k]);
        assert_eq!(t[k], 0);
        assert!(t[cap..].iter().all(|&g| g == GB), "last_error_message wrote past cap {cap}");
    }
    String::from_utf8_lossy(&b[..n]).into_owned()
}

/// The byte offset named in a Misaligned message.
fn v_offset_of(msg: &str) -> usize {
    msg.strip_prefix("data at byte offset ").and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok()).expect("offset in message")
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 2 {
        return;
    }
    let flags = (input[0] & 0x7) as u32; // 0..7: bit 2 is an unknown flag
    let pad = (input[1] & 7) as usize;
    let payload = &input[2..];
    let store = place(payload, pad);
    let buf = store[pad..].as_ptr();
    let len = payload.len();
    // the safe API on the same bytes at the same address (alignment-dependent results agree)
    let safe = vh5::payload::decode_view(&store[pad..], flags);

    // payload_decode_view
    let mut g = GuardedView { pre: [GW; 8], v: MaybeUninit::uninit(), post: [GW; 8] };
    // SAFETY: fill the view with a non-zero pattern to see that it is written.
    unsafe { std::ptr::write_bytes(g.v.as_mut_ptr().cast::<u8>(), 0x77, size_of::<payload_view>()) };
    // SAFETY: buf is valid for len bytes; out points to a writable payload_view.
    let st = unsafe { payload_decode_view(buf, len, flags, g.v.as_mut_ptr()) };
    assert!(g.pre.iter().chain(g.post.iter()).all(|&w| w == GW), "payload_decode_view wrote outside *out");
    // SAFETY: payload_decode_view always writes *out fully (zeroed on failure).
    let v = unsafe { g.v.assume_init() };
    match &safe {
        Ok(sv) => {
            assert_eq!(st, vh5_status::VH5_OK);
            assert!(inside(buf, len, v.data, v.data_len), "data outside buf");
            assert_eq!(v.data as usize - buf as usize, v.data_offset);
            assert_eq!(v.data_len, sv.data.len());
            assert_eq!(v.data_len as u128, v.nelements as u128 * v.itemsize as u128);
            assert!(v.ndim as usize <= 64);
            assert!(v.shape[v.ndim as usize..].iter().all(|&d| d == 0));
            assert_eq!(&v.shape[..v.ndim as usize], sv.shape.as_slice());
            assert_eq!(v.reserved, 0);
            if v.count_form == PAYLOAD_COUNT_BYTES {
                assert!(inside(buf, len, v.count_data, 0));
                assert_eq!(v.count_data as usize - buf as usize, v.count_offset);
            } else {
                assert!(v.count_data.is_null());
            }
            assert!(last_error().is_empty(), "last error not cleared on success");
        }
        Err(e) => {
            assert_ne!(st, vh5_status::VH5_OK);
            // SAFETY: plain bytes of a repr(C) struct.
            let raw = unsafe { std::slice::from_raw_parts((&v as *const payload_view).cast::<u8>(), size_of::<payload_view>()) };
            assert!(raw.iter().all(|&b| b == 0), "*out not zeroed on failure");
            let m = last_error();
            if e.kind == vh5::error::ErrorKind::Misaligned {
                // the message names the address, which differs between the two buffers
                assert!(m.starts_with(&format!("data at byte offset {} (address ", v_offset_of(&e.message))), "{m}");
            } else {
                assert_eq!(m, e.message, "last error message");
            }
        }
    }
    // NULL out / NULL buf
    // SAFETY: NULL out is checked by the callee.
    assert_eq!(unsafe { payload_decode_view(buf, len, flags, std::ptr::null_mut()) }, vh5_status::VH5_ERR_NULL_ARGUMENT);
    if len > 0 {
        let mut v2 = MaybeUninit::<payload_view>::uninit();
        // SAFETY: NULL buf with len > 0 is checked by the callee.
        assert_eq!(unsafe { payload_decode_view(std::ptr::null(), len, 0, v2.as_mut_ptr()) }, vh5_status::VH5_ERR_NULL_ARGUMENT);
    }
    if flags & 4 != 0 {
        return;
    }

    // payload_decode_count: ask the needed size with cap 0, then exact and one-short buffers.
    let mut written = usize::MAX;
    // SAFETY: out may be NULL with cap 0; written is writable.
    let st0 = unsafe { payload_decode_count(buf, len, std::ptr::null_mut(), 0, &mut written) };
    let expect_len = safe.as_ref().map(|v| v.count.len as usize).ok();
    match st0 {
        vh5_status::VH5_OK => assert_eq!(written, 0),
        vh5_status::VH5_ERR_BUFFER_TOO_SMALL => {
            assert!(written > 0 && written <= len);
            if let Some(n) = expect_len {
                assert_eq!(written, n);
            }
            let need = written;
            let mut out = vec![GW as i64; need + 8];
            let mut w2 = usize::MAX;
            // SAFETY: out + 4 holds `need` writable int64.
            let st = unsafe { payload_decode_count(buf, len, out.as_mut_ptr().add(4), need, &mut w2) };
            assert!(out[..4].iter().chain(out[4 + need..].iter()).all(|&x| x == GW as i64), "decode_count wrote outside [out, out+cap)");
            match st {
                vh5_status::VH5_OK => {
                    assert_eq!(w2, need);
                    assert!(out[4..4 + need].iter().all(|&x| x >= 0));
                }
                vh5_status::VH5_ERR_MALFORMED => assert_eq!(w2, 0),
                s => panic!("decode_count with the needed cap returned {s:?}"),
            }
            let mut out = vec![GW as i64; need + 8];
            // SAFETY: out + 4 holds `need - 1` writable int64.
            let st = unsafe { payload_decode_count(buf, len, out.as_mut_ptr().add(4), need - 1, &mut w2) };
            assert_eq!(st, vh5_status::VH5_ERR_BUFFER_TOO_SMALL);
            assert_eq!(w2, need, "NEEDED count reported");
            assert!(out[..4].iter().chain(out[3 + need..].iter()).all(|&x| x == GW as i64), "decode_count wrote past cap-1");
        }
        s => {
            if let Ok(v) = &safe {
                panic!("decode_count failed ({s:?}) on a decodable payload (count form {:?})", v.count.form);
            }
            assert_eq!(written, 0);
        }
    }
    // SAFETY: written NULL is checked by the callee.
    assert_eq!(unsafe { payload_decode_count(buf, len, std::ptr::null_mut(), 0, std::ptr::null_mut()) }, vh5_status::VH5_ERR_NULL_ARGUMENT);

    // payload_copy_data
    let mut written = usize::MAX;
    // SAFETY: out may be NULL with out_len 0.
    let st0 = unsafe { payload_copy_data(buf, len, std::ptr::null_mut(), 0, &mut written) };
    match st0 {
        vh5_status::VH5_OK => assert_eq!(written, 0),
        vh5_status::VH5_ERR_BUFFER_TOO_SMALL => {
            let need = written;
            assert!(need > 0 && need <= len);
            if let Ok(v) = &safe {
                assert_eq!(need, v.data.len());
            }
            let mut out = guarded_bytes(need);
            let mut w2 = usize::MAX;
            // SAFETY: out + 16 holds `need` writable bytes.
            let st = unsafe { payload_copy_data(buf, len, out.as_mut_ptr().add(16).cast(), need, &mut w2) };
            check_bytes_guard(&out, need);
            assert_eq!((st, w2), (vh5_status::VH5_OK, need));
            if let Ok(v) = &safe {
                assert_eq!(&out[16..16 + need], &vh5_fuzz::reference_native(v.data, v.dtype, v.byte_order)[..]);
            }
            let mut out = guarded_bytes(need);
            // SAFETY: out + 16 holds `need - 1` writable bytes.
            let st = unsafe { payload_copy_data(buf, len, out.as_mut_ptr().add(16).cast(), need - 1, &mut w2) };
            assert_eq!((st, w2), (vh5_status::VH5_ERR_BUFFER_TOO_SMALL, need));
            assert!(out.iter().all(|&g| g == GB), "copy_data wrote on BUFFER_TOO_SMALL");
        }
        s => {
            if safe.is_ok() {
                panic!("copy_data failed ({s:?}) on a decodable payload");
            }
            assert_eq!(written, 0);
        }
    }
});
