//! C ABI of the HDF5 half: file/dataset handles and `vh5_read_many_slices`.
