/* vh5_set_num_threads / vh5_get_num_threads and vh5_set_planner / vh5_get_planner through vh5.h. */
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
    /* the planner: a mode set is the mode got; 0 = back to the default; others refused */
    uint32_t mode = vh5_get_planner();
    CHECK(mode == VH5_PLANNER_AUTO || mode == VH5_PLANNER_CHUNKS || mode == VH5_PLANNER_ROWS);
    CHECK(vh5_set_planner(VH5_PLANNER_ROWS) == VH5_OK);
    CHECK(vh5_get_planner() == VH5_PLANNER_ROWS);
    CHECK(vh5_set_planner(VH5_PLANNER_CHUNKS) == VH5_OK);
    CHECK(vh5_get_planner() == VH5_PLANNER_CHUNKS);
    CHECK(vh5_set_planner(4) == VH5_ERR_INVALID_ARGUMENT);
    CHECK(vh5_get_planner() == VH5_PLANNER_CHUNKS);
    CHECK(vh5_set_planner(VH5_PLANNER_DEFAULT) == VH5_OK);
    CHECK(vh5_get_planner() == mode);
    printf("test_threads: ok (default %u threads, planner %u)\n", (unsigned)def, (unsigned)mode);
    return 0;
}
