/* check.h — the whole test harness: CHECK records a pass or a failure with its
 * location; cg_test_done prints "N passed, N failed" and returns the exit code.
 * tools/run-tests.sh adds up the closing lines of every test binary. */
#ifndef CG_CHECK_H
#define CG_CHECK_H
#include <stdio.h>
#include <string.h>

static int cg_t_pass, cg_t_fail;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (cond) {                                                            \
            cg_t_pass++;                                                       \
        } else {                                                               \
            cg_t_fail++;                                                       \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                        \
            printf(__VA_ARGS__);                                               \
            printf("\n");                                                      \
        }                                                                      \
    } while (0)

/* CHECK_STR: b must contain a as a substring (error messages). */
#define CHECK_CONTAINS(hay, needle)                                            \
    CHECK((hay) && strstr((hay), (needle)), "expected \"%s\" in \"%s\"",       \
          (needle), (hay) ? (hay) : "(null)")

static inline int cg_test_done(const char *suite)
{
    printf("%s: %d passed, %d failed\n", suite, cg_t_pass, cg_t_fail);
    fflush(stdout); /* a leak checker ends the process with _exit */
    return cg_t_fail ? 1 : 0;
}
#endif
