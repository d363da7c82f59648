/* C99 test of the version exports: vh5_version_string, vh5_hdf5_version (every pointer may be
 * NULL) and vh5_hdf5_origin, cross-checked with H5get_libversion of the libhdf5 the process
 * loaded (looked up with dlsym; skipped for a static build that exports no HDF5 symbols). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "vh5.h"


typedef int (*libversion_fn)(unsigned *, unsigned *, unsigned *);

int main(void) {
    CHECKF(strcmp(vh5_version_string(), VH5_VERSION_STRING) == 0, "%s", vh5_version_string());

    uint32_t major = 0, minor = 0, release = 0;
    uint8_t ts = 7;
    vh5_status st = vh5_hdf5_version(&major, &minor, &release, &ts);
    CHECKF(st == VH5_OK, "vh5_hdf5_version: %s", vh5_status_name(st));
    CHECKF((major == 1 && minor >= 10) || major >= 2, "libhdf5 %u.%u.%u", (unsigned)major, (unsigned)minor, (unsigned)release);
    CHECKF(ts == 0 || ts == 1, "threadsafe %u", (unsigned)ts);

    /* every pointer may be NULL */
    uint32_t minor2 = 0;
    st = vh5_hdf5_version(NULL, &minor2, NULL, NULL);
    CHECKF(st == VH5_OK && minor2 == minor, "NULL pointers: %s %u", vh5_status_name(st), (unsigned)minor2);

    const char *origin = vh5_hdf5_origin();
    CHECKF(origin && (strcmp(origin, "system") == 0 || strcmp(origin, "vendored") == 0), "origin %s", origin ? origin : "(null)");

    /* the libhdf5 this process loaded says the same */
    libversion_fn get = NULL;
    *(void **)(&get) = dlsym(RTLD_DEFAULT, "H5get_libversion");
    if (get) {
        unsigned a = 0, b = 0, c = 0;
        CHECKF(get(&a, &b, &c) >= 0 && a == major && b == minor && c == release, "H5get_libversion %u.%u.%u", a, b, c);
    } else {
        printf("test_version: H5get_libversion not visible (static build), cross-check skipped\n");
    }
    if (failures) {
        fprintf(stderr, "test_version: %d failures\n", failures);
        return 1;
    }
    printf("test_version: libhdf5 %u.%u.%u (%s, %s)\n", (unsigned)major, (unsigned)minor, (unsigned)release, origin,
           ts ? "thread-safe" : "not thread-safe");
    return 0;
}
