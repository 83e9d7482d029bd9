/* test_gpu_open.c — the CUDA backend's open when the device cannot be had
 * (no driver here, or an index past the last device anywhere): exit path
 * frees everything it allocated (issue: `convgen check` without a GPU leaked
 * the generator's output), says why in one line, and close after a failed
 * open is safe. The heap is measured with mallinfo2, so the leak is caught
 * without a leak checker (make sanitize catches it too). */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu.h"
#include "spec.h"
#include "weights.h"

/* Bytes held by malloc: small blocks and mmapped ones. */
static size_t heap_bytes(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

int main(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_weights w;
    cg_err e = {""};
    if (!s || cg_spec_load("specs/example-conv.yaml", s, &e) || cg_weights_for_spec(s, &w, &e)) {
        CHECK(0, "setup: %s", e.msg);
        return cg_test_done("gpu_open");
    }
    cg_gpu_opts o = {0};
    o.device = 999; /* fails with or without a GPU */
    cg_host_costs hc;
    /* once to load whatever the driver loader keeps for the process */
    cg_gpu *g = NULL;
    CHECK(cg_gpu_open(&g, s, &w, &o, &hc, &e) != 0, "device 999 cannot be opened");
    cg_gpu_close(g);
    size_t before = heap_bytes();
    for (int i = 0; i < 3; i++) {
        g = NULL;
        e.msg[0] = 0;
        CHECK(cg_gpu_open(&g, s, &w, &o, &hc, &e) != 0, "fails again");
        CHECK(e.msg[0] && !strchr(e.msg, '\n'), "one line: %s", e.msg);
        CHECK(strstr(e.msg, "device 999") || strstr(e.msg, "no CUDA driver") || strstr(e.msg, "no device"),
              "says why: %s", e.msg);
        cg_gpu_close(g);
    }
    size_t after = heap_bytes();
    CHECK(after <= before + 4096, "a failed open leaks nothing: heap %zu -> %zu bytes", before, after);
    cg_gpu_close(NULL);
    cg_weights_free(&w);
    free(s);
    return cg_test_done("gpu_open");
}
