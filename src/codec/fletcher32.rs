//! Fletcher32 (`H5Z_FILTER_FLETCHER32`, id 3, no client data; HDF5 1.10 `src/H5Zfletcher32.c`,
//! `H5checksum.c`): a 4-byte checksum appended to the data, little-endian (`UINT32ENCODE`);
//! libhdf5 also accepts the checksum with its two 16-bit halves byte-swapped (files from
//! before 1.6.3). [`append`] (encode) and [`verify_and_strip`] (decode).

/// libhdf5's `H5_checksum_fletcher32`: Fletcher-32 over big-endian 16-bit words, an odd
/// trailing byte taken as the high byte of a last word.
pub fn fletcher32(data: &[u8]) -> u32 {
    let (mut sum1, mut sum2) = (0u32, 0u32);
    let words = data.len() / 2;
    let mut k = 0usize;
    let mut left = words;
    while left > 0 {
        let t = left.min(360);
        left -= t;
        for _ in 0..t {
            sum1 += ((data[k] as u32) << 8) | data[k + 1] as u32;
            k += 2;
            sum2 += sum1;
        }
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    if data.len() % 2 == 1 {
        sum1 += (data[k] as u32) << 8;
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    (sum2 << 16) | sum1
}

/// Encode: append the checksum of `buf`, little-endian.
pub fn append(buf: &mut Vec<u8>) {
    let sum = fletcher32(buf);
    buf.extend_from_slice(&sum.to_le_bytes());
}

/// Decode: check the trailing checksum of `buf` (either half order) and remove it.
/// `Malformed` when too short or on a mismatch.
pub fn verify_and_strip(buf: &mut Vec<u8>) -> crate::error::Result<()> {
    let n = buf.len();
    if n < 4 {
        bail!(Malformed, "fletcher32: {n} bytes, too short for a checksum");
    }
    let stored = u32::from_le_bytes([buf[n - 4], buf[n - 3], buf[n - 2], buf[n - 1]]);
    let sum = fletcher32(&buf[..n - 4]);
    let b = sum.to_le_bytes();
    let reversed = u32::from_le_bytes([b[1], b[0], b[3], b[2]]);
    if stored != sum && stored != reversed {
        bail!(Malformed, "fletcher32 checksum mismatch (stored {stored:#010x}, computed {sum:#010x}): the chunk is corrupted");
    }
    buf.truncate(n - 4);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Textbook Fletcher-32 (sums modulo 65535) over big-endian 16-bit words, odd tail padded.
    fn naive_fletcher(data: &[u8]) -> (u32, u32) {
        let (mut a, mut b) = (0u64, 0u64);
        for w in data.chunks(2) {
            let v = ((w[0] as u64) << 8) | w.get(1).map_or(0, |&x| x as u64);
            a = (a + v) % 65535;
            b = (b + a) % 65535;
        }
        (a as u32, b as u32)
    }

    proptest! {
        #[test]
        fn fletcher32_matches_textbook(data in proptest::collection::vec(any::<u8>(), 0..2000)) {
            let s = fletcher32(&data);
            let (a, b) = naive_fletcher(&data);
            // libhdf5 folds with end-around carry: same values modulo 65535.
            prop_assert_eq!((s & 0xffff) % 65535, a);
            prop_assert_eq!((s >> 16) % 65535, b);
        }
    }

    #[test]
    fn fletcher_appended_little_endian() {
        let mut buf = vec![1u8, 2, 3, 4, 5];
        append(&mut buf);
        let sum = fletcher32(&[1, 2, 3, 4, 5]);
        assert_eq!(&buf[5..], &sum.to_le_bytes());
        verify_and_strip(&mut buf).unwrap();
        assert_eq!(buf, [1, 2, 3, 4, 5]);
    }
}
