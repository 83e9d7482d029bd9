/* weights_dtype.c — rewrites a safetensors file with every tensor stored as
 * F32, F16 or BF16 (rounded to nearest, ties to even), through convgen's own
 * reader and writer: how the shipped models were made F16 (docs/user-guide.md, "Trained
 * models"). Usage: weights_dtype F16|BF16|F32 IN OUT (OUT may be IN). */
#include "weights.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Exit codes as convgen's: 2 usage, 3 bad input, 5 I/O. */
int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "F16") && strcmp(argv[1], "BF16") && strcmp(argv[1], "F32"))) {
        fprintf(stderr, "usage: weights_dtype F16|BF16|F32 IN.safetensors OUT.safetensors\n");
        return 2;
    }
    cg_wdtype d = strcmp(argv[1], "F16") == 0 ? CG_W_F16 : strcmp(argv[1], "BF16") == 0 ? CG_W_BF16 : CG_W_F32;
    cg_weights w;
    cg_err e;
    if (cg_weights_load(argv[2], &w, &e)) {
        fprintf(stderr, "weights_dtype: %s\n", e.msg);
        return 3;
    }
    /* what the rounding does, so that a model that would lose range is seen */
    long long total = 0, overflow = 0, flushed = 0, tiny = 0;
    double maxrel = 0;
    for (int k = 0; k < w.n; k++)
        for (long long i = 0; i < w.t[k].count; i++) {
            float x = w.t[k].data[i];
            float y = d == CG_W_F16 ? cg_f16_to_f32(cg_f32_to_f16(x))
                    : d == CG_W_BF16 ? cg_bf16_to_f32(cg_f32_to_bf16(x)) : x;
            total++;
            if (isinf(y) && !isinf(x)) overflow++;
            else if (y == 0 && x != 0) flushed++;
            else if (d == CG_W_F16 && fabs(x) < 0x1p-14f && x != 0) tiny++;
            else if (x != 0 && fabs((double)y - x) / fabs((double)x) > maxrel)
                maxrel = fabs((double)y - x) / fabs((double)x);
        }
    int rc = cg_weights_save_as(argv[3], &w, d, &e);
    if (rc) fprintf(stderr, "weights_dtype: %s\n", e.msg);
    else
        printf("%s: %d tensors, %lld values as %s: %lld overflowed, %lld flushed to zero, %lld "
               "subnormal, largest relative change of the others %.3g\n", argv[3], w.n, total,
               argv[1], overflow, flushed, tiny, maxrel);
    cg_weights_free(&w);
    return rc ? 5 : 0;
}
