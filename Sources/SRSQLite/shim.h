#ifndef SRSQLITE_SHIM_H
#define SRSQLITE_SHIM_H

#include <sqlite3.h>

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

#endif
