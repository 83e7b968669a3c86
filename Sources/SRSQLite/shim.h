#ifndef SRSQLITE_SHIM_H
#define SRSQLITE_SHIM_H

#include <sqlite3.h>
#include <string.h>

// glibc's mallopt(M_ARENA_MAX, n): malloc.h is not in Swift's Glibc module. Here because this is
// the package's one C header; the memory it bounds is mostly SQLite's page caches. A no-op elsewhere.
#if defined(__linux__) && __has_include(<malloc.h>)
#include <malloc.h>
#endif
#if defined(M_ARENA_MAX)
static inline int srsqlite_limit_malloc_arenas(int arenas) {
    return mallopt(M_ARENA_MAX, arenas);
}
#else
static inline int srsqlite_limit_malloc_arenas(int arenas) {
    (void)arenas;
    return 1;
}
#endif

// sqlite3_db_config is variadic; Swift cannot call it. These wrappers pin the forms we use.
static inline int srsqlite_db_config_int(sqlite3 *db, int op, int value) {
    int current = 0;
    return sqlite3_db_config(db, op, value, &current);
}

// SQLITE_TRANSIENT is a macro casting -1 to a destructor pointer; Swift cannot import it.
static inline int srsqlite_bind_text_transient(sqlite3_stmt *stmt, int index, const char *text, int length) {
    return sqlite3_bind_text(stmt, index, text, length, SQLITE_TRANSIENT);
}

static inline int srsqlite_bind_blob_transient(sqlite3_stmt *stmt, int index, const void *bytes, int length) {
    return sqlite3_bind_blob(stmt, index, bytes, length, SQLITE_TRANSIENT);
}

// Function results copied by SQLite (SQLITE_TRANSIENT, which Swift cannot import).
static inline void srsqlite_result_text_transient(sqlite3_context *context, const char *text, int length) {
    sqlite3_result_text(context, text, length, SQLITE_TRANSIENT);
}

static inline void srsqlite_result_blob_transient(sqlite3_context *context, const void *bytes, int length) {
    sqlite3_result_blob(context, bytes, length, SQLITE_TRANSIENT);
}

// storerescue_convert(value, type, entity, attribute, pk): the values that are already in the
// storage form of Core Data attribute type `type` (AttributeType's raw values) are returned as
// they are, here, without leaving C; every other value goes to the slow path (Swift), whose
// function pointer is the function's user data. Migrations call this once per row and column.
typedef void (*srsqlite_function)(sqlite3_context *, int, sqlite3_value **);

static inline void srsqlite_convert_fast(sqlite3_context *context, int count, sqlite3_value **values) {
    int kind = sqlite3_value_type(values[0]);
    if (kind == SQLITE_NULL) { sqlite3_result_null(context); return; }
    int target = sqlite3_value_int(values[1]);
    int fits = 0;
    if (kind == SQLITE_INTEGER) {
        sqlite3_int64 n = sqlite3_value_int64(values[0]);
        switch (target) {
        case 100: fits = n >= -32768 && n <= 32767; break;
        case 200: fits = n >= -2147483648LL && n <= 2147483647LL; break;
        case 300: fits = 1; break;
        case 800: fits = n == 0 || n == 1; break;
        case 400: fits = 1; break;
        }
    } else if (kind == SQLITE_FLOAT) {
        fits = target == 500 || target == 900 || target == 400;
    } else if (kind == SQLITE_TEXT) {
        fits = target == 700 || target == 1200;
    } else if (kind == SQLITE_BLOB) {
        fits = target == 1000 || target == 1800 || (target == 1100 && sqlite3_value_bytes(values[0]) == 16);
    }
    if (fits) { sqlite3_result_value(context, values[0]); return; }
    ((srsqlite_function)sqlite3_user_data(context))(context, count, values);
}

// Registers storerescue_convert with its fast path here and `slow` for the rest.
static inline int srsqlite_register_convert(sqlite3 *db, const char *name, srsqlite_function slow) {
    return sqlite3_create_function_v2(db, name, 5, SQLITE_UTF8 | SQLITE_DIRECTONLY | SQLITE_DETERMINISTIC,
                                      (void *)slow, srsqlite_convert_fast, 0, 0, 0);
}

// Collations a statement names and the connection lacks (an Android app's LOCALIZED or UNICODE,
// an app's own) are made on demand, comparing bytes as BINARY does: a recovered CREATE TABLE that
// names one is then understood by SQLite's parser instead of refused ("no such collation
// sequence"), which had sent every row of such a table to lost and found. Only for connections
// that parse statements; the order a collation gives never matters there.
static inline int srsqlite_binary_compare(void *unused, int length1, const void *bytes1, int length2, const void *bytes2) {
    (void)unused;
    int shorter = length1 < length2 ? length1 : length2;
    int order = shorter > 0 ? memcmp(bytes1, bytes2, (size_t)shorter) : 0;
    return order != 0 ? order : (length1 > length2) - (length1 < length2);
}

static inline void srsqlite_make_missing_collation(void *unused, sqlite3 *db, int encoding, const char *name) {
    (void)unused;
    sqlite3_create_collation_v2(db, name, encoding, 0, srsqlite_binary_compare, 0);
}

static inline int srsqlite_accept_any_collation(sqlite3 *db) {
    return sqlite3_collation_needed(db, 0, srsqlite_make_missing_collation);
}

// A function an app registers on its own connections (named in a CHECK constraint or a generated
// column): SQLite resolves functions when it creates a table, so a recovered CREATE TABLE naming
// one was refused ("no such function") and every row of the table went to lost and found. For
// connections that parse statements only, such a name is made a placeholder taking any number
// of arguments and returning NULL: deterministic and innocuous (as generated columns and
// trusted_schema=OFF require), and never called there, since no row is ever written.
static inline void srsqlite_placeholder_function(sqlite3_context *context, int count, sqlite3_value **values) {
    (void)count;
    (void)values;
    sqlite3_result_null(context);
}

static inline int srsqlite_create_placeholder_function(sqlite3 *db, const char *name) {
    return sqlite3_create_function_v2(db, name, -1, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, 0,
                                      srsqlite_placeholder_function, 0, 0, 0);
}

// Signals delivered through a pipe. Swift cannot write a signal handler that is safe to run at
// any instant (its runtime may allocate or take locks), and a Dispatch signal source is made
// ready on another thread some milliseconds after it is created: a signal in between was lost
// (the disposition had to be SIG_IGN by then), and 15 of 300 runs sent SIGTERM 7-15 ms after
// starting ran to the end. This handler only writes the signal's number, one byte, to a pipe
// (write(2) is async-signal-safe), keeping errno; sigaction makes it the disposition at once, so
// from the moment srsqlite_route_signals returns no signal is lost: it waits in the pipe
// until read. Both ends close on exec; the write end is non-blocking (a full pipe drops a signal
// rather than block the thread the handler interrupted), the read end blocks. The pipe is made
// and its reader started before the handler is installed: without a reader (the system refused
// the thread) the signals keep their default action instead of going into a pipe nobody reads.
// Not <fcntl.h>: it brings in <bits/stat.h>, and with `struct stat` defined in this module too,
// Swift (MemberImportVisibility) may take SRSQLite as its defining module and refuse `stat()`
// and `st_mode` in a file that does not import SRSQLite, depending on how files are batched
// (an incremental test build failed so in FileMover.swift and ReadableFile.swift). The
// descriptor flags are set with ioctl instead.
#include <errno.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

// The pipe's write end, -1 until srsqlite_make_signal_pipe made it (once per process).
static volatile sig_atomic_t srsqlite_signal_pipe_write_end = -1;

static inline void srsqlite_signal_to_pipe(int number) {
    int saved = errno;
    unsigned char byte = (unsigned char)number;
    ssize_t written;
    do {
        written = write((int)srsqlite_signal_pipe_write_end, &byte, 1);
    } while (written < 0 && errno == EINTR);
    errno = saved;
}

// Makes the pipe, once per process. Returns its read end, or -1 with errno set (EBUSY: made
// already). The handler writes nothing until srsqlite_route_signals installs it.
static inline int srsqlite_make_signal_pipe(void) {
    if (srsqlite_signal_pipe_write_end >= 0) {
        errno = EBUSY;
        return -1;
    }
    int ends[2];
    if (pipe(ends) != 0) return -1;
    int on = 1;
    for (int i = 0; i < 2; i++) {
        // FIOCLEX: close on exec (F_SETFD, FD_CLOEXEC); FIONBIO: non-blocking (O_NONBLOCK).
        if (ioctl(ends[i], FIOCLEX) != 0 || (i == 1 && ioctl(ends[i], FIONBIO, &on) != 0)) {
            int saved = errno;
            close(ends[0]);
            close(ends[1]);
            errno = saved;
            return -1;
        }
    }
    srsqlite_signal_pipe_write_end = ends[1];
    return ends[0];
}

// Closes the pipe made by srsqlite_make_signal_pipe before any handler writes to it (no thread
// could be started to read it); a later srsqlite_make_signal_pipe may make another.
static inline void srsqlite_close_signal_pipe(int read_end) {
    close(read_end);
    close((int)srsqlite_signal_pipe_write_end);
    srsqlite_signal_pipe_write_end = -1;
}

// For each of `count` signals in `numbers` that is not ignored already: installs the handler
// (SA_RESTART), which writes it into the pipe, when `to_pipe` is nonzero; otherwise leaves its
// disposition (the default action) as it is. Either way unblocks them on the calling thread.
// Returns 0, or -1 with errno set.
static inline int srsqlite_route_signals(const int *numbers, int count, int to_pipe) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = srsqlite_signal_to_pipe;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigset_t handled;
    sigemptyset(&handled);
    for (int i = 0; i < count; i++) {
        // A signal the parent set to be ignored stays ignored, as Unix programs leave it
        // (nohup's SIGHUP; SIGINT for a non-interactive shell's background job).
        struct sigaction inherited;
        if (sigaction(numbers[i], NULL, &inherited) == 0 && inherited.sa_handler == SIG_IGN) continue;
        if (to_pipe && sigaction(numbers[i], &action, NULL) != 0) return -1;
        sigaddset(&handled, numbers[i]);
    }
    // A parent may have started this process with them blocked (a spawning thread's mask is
    // inherited: Foundation's Process from a Dispatch thread does this). Unblocked on the calling
    // thread, they are delivered there (or to any other thread not blocking them); one already
    // pending arrives now.
    if (pthread_sigmask(SIG_UNBLOCK, &handled, NULL) != 0) return -1;
    return 0;
}

#endif
