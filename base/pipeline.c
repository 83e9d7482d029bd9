/* pipeline.c — batches in flight over several sets (see pipeline.h). */
#include "pipeline.h"

int cg_pipe_run(long long n, long long batch, int sets, const cg_pipe_ops *ops, void *ctx, cg_err *e)
{
    if (batch < 1) return cg_fail(e, "batch size %lld: must be at least 1", batch);
    if (sets < 1 || sets > CG_PIPE_MAX_SETS)
        return cg_fail(e, "%d stream sets: must be from 1 to %d", sets, CG_PIPE_MAX_SETS);
    long long off[CG_PIPE_MAX_SETS], cnt[CG_PIPE_MAX_SETS];
    int busy[CG_PIPE_MAX_SETS] = {0};
    long long i = 0, done = 0;
    /* submit batch i onto set i % sets, finishing that set's previous batch
     * (batch i - sets, the oldest in flight) first; then finish the rest in order */
    for (long long at = 0; at < n; at += batch, i++) {
        int s = (int)(i % sets);
        if (busy[s]) {
            if (ops->finish(ctx, s, off[s], cnt[s], e)) goto fail;
            busy[s] = 0;
            done++;
        }
        off[s] = at;
        cnt[s] = n - at < batch ? n - at : batch;
        if (ops->submit(ctx, s, off[s], cnt[s], e)) goto fail;
        busy[s] = 1;
    }
    for (; done < i; done++) {
        int s = (int)(done % sets);
        if (ops->finish(ctx, s, off[s], cnt[s], e)) goto fail;
        busy[s] = 0;
    }
    return 0;
fail:
    if (ops->drain) ops->drain(ctx);
    return -1;
}

void cg_share(long long n, int ranks, int rank, long long *off, long long *count)
{
    long long base = n / ranks, extra = n % ranks;
    *count = base + (rank < extra);
    *off = rank * base + (rank < extra ? rank : extra);
}
