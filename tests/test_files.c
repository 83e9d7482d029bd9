/* test_files.c — the atomic writer every output goes through
 * (cg_write_file_atomic): the temp files of writers that were killed are
 * removed when the same file is written again; nothing else is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "util.h"

static char dir[64];

/* A PID that belonged to a process that has exited. */
static long gone_pid(void)
{
    pid_t p = fork();
    if (p == 0) _exit(0);
    if (p > 0) waitpid(p, NULL, 0);
    return (long)p;
}

static int put(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

static int present(const char *name)
{
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return lstat(path, &st) == 0;
}

static void test_reclaim(void)
{
    long dead = gone_pid(), live = (long)getppid();
    CHECK(dead > 0, "fork");
    char d0[96], d7[96], dlink[96], alive[96], nodot[96], other[96], tail[96], zero[96];
    snprintf(d0, sizeof d0, "out.npy.tmp.%ld.0", dead);     /* a killed writer's */
    snprintf(d7, sizeof d7, "out.npy.tmp.%ld.7", dead);     /* another of its */
    snprintf(dlink, sizeof dlink, "out.npy.tmp.%ld.1", dead); /* a link: no writer makes one */
    snprintf(alive, sizeof alive, "out.npy.tmp.%ld.0", live); /* a writer still running */
    snprintf(nodot, sizeof nodot, "out.npy.tmp.%ld", dead);   /* not the scheme */
    snprintf(other, sizeof other, "in.npy.tmp.%ld.0", dead);  /* another file's */
    snprintf(tail, sizeof tail, "out.npy.tmp.%ld.0.bak", dead);
    snprintf(zero, sizeof zero, "out.npy.tmp.0%ld.0", dead);
    const char *keep[] = {alive, nodot, other, tail, zero, "out.npy.old", "victim"};
    CHECK(put(d0, "x") == 0 && put(d7, "x") == 0, "dead temps made");
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++) CHECK(put(keep[i], "keep") == 0, "%s made", keep[i]);
    char victim[128], link[192];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(link, sizeof link, "%s/%s", dir, dlink);
    CHECK(symlink(victim, link) == 0, "link planted");

    char out[128];
    snprintf(out, sizeof out, "%s/out.npy", dir);
    cg_err e = {{0}};
    CHECK(cg_write_file_atomic(out, "data", 4, &e) == 0, "written: %s", e.msg);
    CHECK(!present(d0) && !present(d7), "a killed writer's temp files of out.npy are gone");
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++) CHECK(present(keep[i]), "%s stays", keep[i]);
    CHECK(present(dlink), "a link named like a temp file stays");
    cg_buf b;
    CHECK(cg_read_file(victim, &b, &e) == 0 && !strcmp(b.data, "keep"), "the link's target is untouched");
    cg_buf_free(&b);
    CHECK(cg_read_file(out, &b, &e) == 0 && b.len == 4 && !memcmp(b.data, "data", 4), "out.npy holds the data");
    cg_buf_free(&b);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/cg_files_XXXXXX");
    if (!mkdtemp(dir)) return printf("mkdtemp failed\n"), 1;
    test_reclaim();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) printf("note: could not remove %s\n", dir);
    return cg_test_done("files");
}
