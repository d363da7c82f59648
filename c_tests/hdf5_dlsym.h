/* libhdf5's functions for the C test programs that write HDF5 files themselves
 * (header-only, C99): looked up with dlsym in the process's global scope, where libvh5 loaded
 * its libhdf5, so the programs need no -lhdf5 and use the very libhdf5 vh5 calls.
 *
 * Call hdf5_dlsym_load() after a vh5 call that loads libhdf5 (e.g. vh5_hdf5_version): it
 * fills the table `h5` and returns 0 when a symbol is missing (a static build that exports no
 * HDF5 symbols: the program then skips). The including file must define _GNU_SOURCE before
 * any system header (RTLD_DEFAULT). */
#ifndef VH5_C_TESTS_HDF5_DLSYM_H
#define VH5_C_TESTS_HDF5_DLSYM_H

#include <dlfcn.h>
#include <stdint.h>

#ifndef RTLD_DEFAULT
#error "define _GNU_SOURCE before the first #include (hdf5_dlsym.h needs RTLD_DEFAULT)"
#endif

typedef int64_t hid;
typedef unsigned long long hsize;

/* The libhdf5 functions (and the native double type id) the tests call. */
static struct {
    int (*open)(void);
    hid (*fcreate)(const char *, unsigned, hid, hid);
    hid (*fopen)(const char *, unsigned, hid);
    int (*fclose)(hid);
    hid (*gcreate2)(hid, const char *, hid, hid, hid);
    int (*gclose)(hid);
    hid (*screate_simple)(int, const hsize *, const hsize *);
    int (*sclose)(hid);
    hid (*dcreate2)(hid, const char *, hid, hid, hid, hid, hid);
    hid (*dopen2)(hid, const char *, hid);
    int (*dwrite)(hid, hid, hid, hid, hid, const void *);
    int (*dclose)(hid);
    int (*lcreate_soft)(const char *, hid, const char *, hid, hid);
    int (*iis_valid)(hid);
    hid *native_double;
} h5;

/* Fill `h5`; 1 when every symbol was found, 0 otherwise. */
static inline int hdf5_dlsym_load(void) {
#define SYM(field, name) *(void **)(&h5.field) = dlsym(RTLD_DEFAULT, name)
    SYM(open, "H5open");
    SYM(fcreate, "H5Fcreate");
    SYM(fopen, "H5Fopen");
    SYM(fclose, "H5Fclose");
    SYM(gcreate2, "H5Gcreate2");
    SYM(gclose, "H5Gclose");
    SYM(screate_simple, "H5Screate_simple");
    SYM(sclose, "H5Sclose");
    SYM(dcreate2, "H5Dcreate2");
    SYM(dopen2, "H5Dopen2");
    SYM(dwrite, "H5Dwrite");
    SYM(dclose, "H5Dclose");
    SYM(lcreate_soft, "H5Lcreate_soft");
    SYM(iis_valid, "H5Iis_valid");
    SYM(native_double, "H5T_NATIVE_DOUBLE_g");
#undef SYM
    return h5.open && h5.fcreate && h5.fopen && h5.fclose && h5.gcreate2 && h5.gclose && h5.screate_simple && h5.sclose &&
           h5.dcreate2 && h5.dopen2 && h5.dwrite && h5.dclose && h5.lcreate_soft && h5.iis_valid && h5.native_double;
}

#endif
