//! HDF5 filter ids: libhdf5's own filters (`H5Z_FILTER_*`) and the plugins of the HDF Group's
//! registry of filter ids that hdf5plugin and h5py ship
//! (<https://github.com/HDFGroup/hdf5_plugins/blob/master/docs/RegisteredFilterPlugins.md>).
//! A file may use a registered id for another filter: vh5 names plugins with their id.

pub use hdf5_sys::h5z::{
    H5Z_FILTER_DEFLATE as DEFLATE, H5Z_FILTER_FLETCHER32 as FLETCHER32, H5Z_FILTER_NBIT as NBIT, H5Z_FILTER_SCALEOFFSET as SCALEOFFSET, H5Z_FILTER_SHUFFLE as SHUFFLE,
    H5Z_FILTER_SZIP as SZIP,
};

/// bzip2 (hdf5plugin).
pub const BZIP2: i32 = 307;
/// h5py's LZF compression (h5py registers it in its own libhdf5 only).
pub const LZF: i32 = 32000;
/// Blosc (version 1).
pub const BLOSC: i32 = 32001;
/// LZ4.
pub const LZ4: i32 = 32004;
/// Bitshuffle (optionally with LZ4 or Zstandard).
pub const BITSHUFFLE: i32 = 32008;
/// ZFP (lossy modes).
pub const ZFP: i32 = 32013;
/// Zstandard.
pub const ZSTD: i32 = 32015;
/// SZ (lossy).
pub const SZ: i32 = 32017;
/// Blosc2 (its filters may be lossy).
pub const BLOSC2: i32 = 32026;
