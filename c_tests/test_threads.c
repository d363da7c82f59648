/* vh5_set_num_threads / vh5_get_num_threads through vh5.h. */
#include <stdio.h>
#include <stdlib.h>
#include "vh5.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); return 1; } } while (0)

int main(void) {
    uint32_t def = vh5_get_num_threads();
    CHECK(def >= 1);
    CHECK(vh5_set_num_threads(3) == VH5_OK);
    CHECK(vh5_get_num_threads() == 3);
    CHECK(vh5_set_num_threads(1) == VH5_OK);
    CHECK(vh5_get_num_threads() == 1);
    CHECK(vh5_set_num_threads(0) == VH5_OK);
    CHECK(vh5_get_num_threads() == def);
    printf("test_threads: ok (default %u threads)\n", (unsigned)def);
    return 0;
}
