//! HDF5 filter codecs (pure, safe Rust, no libhdf5): the decoding side ([`decode`]: deflate,
//! shuffle, fletcher32, byte swap) and the encoding side ([`encode`]) of the filter pipelines
//! vh5 runs itself, outside the libhdf5 lock.

pub mod decode;
pub mod encode;
