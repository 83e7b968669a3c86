/*
 * sqlite-profile.c: an LD_PRELOAD shim that logs every SQL statement a process runs through the
 * system libsqlite3, with the time SQLite spent running it, without changing the program.
 * Used by Scripts/bench-migrate.sh to show where `storerescue migrate` spends its time.
 *
 *   cc -O2 -shared -fPIC -o sqlite-profile.so Scripts/sqlite-profile.c -ldl -lsqlite3
 *   SQLITE_PROFILE_OUT=trace.tsv LD_PRELOAD=$PWD/sqlite-profile.so storerescue migrate ...
 *
 * Each line of SQLITE_PROFILE_OUT: seconds since the process started (at the statement's end),
 * the statement's run time in milliseconds, the connection's file, and the SQL (newlines and
 * tabs turned into spaces). It wraps sqlite3_open_v2 and registers SQLITE_TRACE_PROFILE on
 * every connection the process opens; statements run by sqlite3_exec are included.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static FILE *out;
static struct timespec origin;

static double since_origin(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - origin.tv_sec) + (double)(now.tv_nsec - origin.tv_nsec) / 1e9;
}

static int on_profile(unsigned kind, void *context, void *statement, void *nanoseconds) {
    (void)context;
    if (kind != SQLITE_TRACE_PROFILE || out == NULL) return 0;
    sqlite3_stmt *stmt = statement;
    const char *sql = sqlite3_sql(stmt);
    const char *file = sqlite3_db_filename(sqlite3_db_handle(stmt), "main");
    const char *base = file ? strrchr(file, '/') : NULL;
    fprintf(out, "%.3f\t%.1f\t%s\t", since_origin(), (double)(*(sqlite3_int64 *)nanoseconds) / 1e6,
            base ? base + 1 : (file && *file ? file : ":memory:"));
    for (const char *c = sql ? sql : ""; *c; c++) fputc(*c == '\n' || *c == '\t' || *c == '\r' ? ' ' : *c, out);
    fputc('\n', out);
    fflush(out);
    return 0;
}

__attribute__((constructor)) static void start(void) {
    clock_gettime(CLOCK_MONOTONIC, &origin);
    const char *path = getenv("SQLITE_PROFILE_OUT");
    out = fopen(path ? path : "/dev/stderr", "a");
}

int sqlite3_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs) {
    static int (*real)(const char *, sqlite3 **, int, const char *);
    if (real == NULL) real = (int (*)(const char *, sqlite3 **, int, const char *))dlsym(RTLD_NEXT, "sqlite3_open_v2");
    int rc = real(filename, db, flags, vfs);
    if (rc == SQLITE_OK && db && *db) sqlite3_trace_v2(*db, SQLITE_TRACE_PROFILE, on_profile, NULL);
    return rc;
}
