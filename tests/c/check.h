/*
 * tests/c/check.h — tiny assertion macros for the C tests (header only).
 *
 * Every CHECK counts as one pass or one failure; a failure prints
 * "file:line: CHECK failed: <expression> <detail>" and the test goes on, so
 * one run shows every broken expectation. main() ends with
 * `return check_finish();`, which prints "N passed, N failed" and returns
 * non-zero if anything failed (or if nothing was checked at all).
 *
 *     CHECK(cond)                       any condition
 *     CHECK_MSG(cond, fmt, ...)         with a printf-style detail on failure
 *     CHECK_EQ_INT(a, b)                integers (printed on failure)
 *     CHECK_EQ_STR(a, b)                NUL-terminated strings
 *     CHECK_CONTAINS(haystack, needle)  substring
 *     CHECK_NEAR(a, b, tol)             |a - b| <= tol
 *     CHECK_STATUS(expr, want)          an ember_status (prints last error)
 *     CHECK_OK(expr)                    CHECK_STATUS(expr, EMBER_OK)
 *     CHECK_ERR(expr, want, substr)     status and a last-error substring
 *
 * CHECK_* evaluate to the condition's truth, so a test can skip work that
 * depends on an earlier check: `if (!CHECK_OK(load(...))) return;`.
 */
#ifndef EMBER_TESTS_CHECK_H
#define EMBER_TESTS_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ember/ember.h"

static int check_passed_;
static int check_failed_;
static const char *check_section_ = "";

/* Names the group of checks that follows (printed with failures). */
static inline void check_section(const char *name) {
    check_section_ = name;
    printf("-- %s\n", name);
    fflush(stdout);
}

static inline bool check_report_(bool ok, const char *file, int line, const char *expr,
                                 const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static inline bool check_report_(bool ok, const char *file, int line, const char *expr,
                                 const char *fmt, ...) {
    if (ok) {
        check_passed_++;
        return true;
    }
    check_failed_++;
    printf("%s:%d: [%s] CHECK failed: %s", file, line, check_section_, expr);
    if (fmt != NULL && fmt[0] != '\0') {
        va_list ap;
        va_start(ap, fmt);
        printf(" -- ");
        vprintf(fmt, ap);
        va_end(ap);
    }
    printf("\n");
    fflush(stdout);
    return false;
}

#define CHECK(cond) check_report_((cond) ? true : false, __FILE__, __LINE__, #cond, "%s", "")

#define CHECK_MSG(cond, ...) check_report_((cond) ? true : false, __FILE__, __LINE__, #cond, __VA_ARGS__)

#define CHECK_EQ_INT(a, b)                                                                        \
    check_eq_int_((long long)(a), (long long)(b), __FILE__, __LINE__, #a " == " #b)

static inline bool check_eq_int_(long long a, long long b, const char *file, int line,
                                 const char *expr) {
    return check_report_(a == b, file, line, expr, "%lld != %lld", a, b);
}

#define CHECK_EQ_STR(a, b) check_eq_str_((a), (b), __FILE__, __LINE__, #a " == " #b)

static inline bool check_eq_str_(const char *a, const char *b, const char *file, int line,
                                 const char *expr) {
    bool ok = a != NULL && b != NULL && strcmp(a, b) == 0;
    return check_report_(ok, file, line, expr, "\"%s\" != \"%s\"", a ? a : "(null)",
                         b ? b : "(null)");
}

#define CHECK_CONTAINS(h, n) check_contains_((h), (n), __FILE__, __LINE__, #h " contains " #n)

static inline bool check_contains_(const char *h, const char *n, const char *file, int line,
                                   const char *expr) {
    bool ok = h != NULL && n != NULL && strstr(h, n) != NULL;
    return check_report_(ok, file, line, expr, "\"%s\" lacks \"%s\"", h ? h : "(null)",
                         n ? n : "(null)");
}

#define CHECK_NEAR(a, b, tol)                                                                     \
    check_near_((double)(a), (double)(b), (double)(tol), __FILE__, __LINE__, #a " ~= " #b)

static inline bool check_near_(double a, double b, double tol, const char *file, int line,
                               const char *expr) {
    bool ok = fabs(a - b) <= tol;
    return check_report_(ok, file, line, expr, "%.9g vs %.9g (tol %.3g)", a, b, tol);
}

#define CHECK_STATUS(expr, want) check_status_((expr), (want), __FILE__, __LINE__, #expr)
#define CHECK_OK(expr) CHECK_STATUS(expr, EMBER_OK)

static inline bool check_status_(ember_status got, ember_status want, const char *file, int line,
                                 const char *expr) {
    return check_report_(got == want, file, line, expr,
                         "status 0x%04x (%s), expected 0x%04x (%s); last error: \"%s\"",
                         (unsigned)got, ember_status_str(got), (unsigned)want,
                         ember_status_str(want), ember_last_error());
}

/* The status must be want and the last error message must contain substr. */
#define CHECK_ERR(expr, want, substr)                                                             \
    check_err_((expr), (want), (substr), __FILE__, __LINE__, #expr)

static inline bool check_err_(ember_status got, ember_status want, const char *substr,
                              const char *file, int line, const char *expr) {
    bool ok = check_status_(got, want, file, line, expr);
    const char *msg = ember_last_error();
    bool has = strstr(msg, substr) != NULL;
    check_report_(has, file, line, expr, "last error \"%s\" lacks \"%s\"", msg, substr);
    return ok && has;
}

/* Prints the totals; returns the process exit status. */
static inline int check_finish(void) {
    printf("%d passed, %d failed\n", check_passed_, check_failed_);
    fflush(stdout);
    return check_failed_ == 0 && check_passed_ > 0 ? 0 : 1;
}

#endif /* EMBER_TESTS_CHECK_H */
