"""Drop-in replacements for functions of other packages, backed by vh5.

- :mod:`vh5.compat.versioned_hdf5`: ``read_many_slices`` of versioned-hdf5 2.6.0.
- :mod:`vh5.compat.pyactivestorage`: ``decode_result`` of PyActiveStorage's Reductionist client.
- :mod:`vh5.compat.msgpack_numpy`: ``unpackb`` of msgpack-numpy, arrays as views.
"""
