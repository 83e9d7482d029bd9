/* spec_value.c — typed reads of spec tree nodes. YAML's loose typing is not
 * accepted: quoted "5" is a string, 5.0 is not an integer, yes/no are not booleans,
 * and every refusal says what was expected and what was found. */
#include "spec_yaml.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Shortens a scalar for a message and replaces control bytes, so one odd value
 * can neither hide the rest of the message nor break it onto two lines. */
const char *cg_y_show(const char *s, char *buf, size_t size)
{
    size_t len = strlen(s), n = len;
    int cut = len >= size;
    if (cut) {
        n = size - 4; /* room for "..." and the NUL */
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--; /* whole characters */
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)s[i];
        buf[i] = (b < 0x20 || b == 0x7F) ? '?' : (char)b;
    }
    if (cut) memcpy(buf + n, "...", 3), n += 3;
    buf[n] = 0;
    return buf;
}

/* Plain scalars YAML reads as null. */
static int is_null(const cg_ynode *n)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    if (n->kind != CG_Y_SCALAR || !n->plain) return 0;
    for (int i = 0; nulls[i]; i++)
        if (!strcmp(n->text, nulls[i])) return 1;
    return 0;
}

/* [-+]?[0-9]+ */
static int int_syntax(const char *s)
{
    if (*s == '-' || *s == '+') s++;
    if (!isdigit((unsigned char)*s)) return 0;
    while (isdigit((unsigned char)*s)) s++;
    return *s == 0;
}

/* A decimal number: [-+]?(D+(.D*)?|.D+)([eE][-+]?D+)? */
static int num_syntax(const char *s)
{
    int digits = 0;
    if (*s == '-' || *s == '+') s++;
    while (isdigit((unsigned char)*s)) s++, digits++;
    if (*s == '.') {
        s++;
        while (isdigit((unsigned char)*s)) s++, digits++;
    }
    if (!digits) return 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+') s++;
        if (!isdigit((unsigned char)*s)) return 0;
        while (isdigit((unsigned char)*s)) s++;
    }
    return *s == 0;
}

/* YAML's infinities and not-a-numbers, which look like numbers to a reader. */
static int special_float(const char *s)
{
    if (*s == '-' || *s == '+') s++;
    return !strcmp(s, ".inf") || !strcmp(s, ".Inf") || !strcmp(s, ".INF") ||
           !strcmp(s, ".nan") || !strcmp(s, ".NaN") || !strcmp(s, ".NAN");
}

/* What a node is, in words, for "expected X, got Y" messages. */
const char *cg_y_what(const cg_ynode *n, char *buf, size_t size)
{
    char show[80];
    if (n->kind == CG_Y_MAP) snprintf(buf, size, "a mapping");
    else if (n->kind == CG_Y_SEQ) snprintf(buf, size, "a sequence");
    else if (!n->plain) snprintf(buf, size, "the string \"%s\"", cg_y_show(n->text, show, sizeof show));
    else if (is_null(n)) snprintf(buf, size, "nothing (null)");
    else if (!strcmp(n->text, "true") || !strcmp(n->text, "false"))
        snprintf(buf, size, "the boolean %s", n->text);
    else if (int_syntax(n->text)) snprintf(buf, size, "the integer %s", cg_y_show(n->text, show, sizeof show));
    else if (num_syntax(n->text) || special_float(n->text))
        snprintf(buf, size, "the number %s", cg_y_show(n->text, show, sizeof show));
    else snprintf(buf, size, "'%s'", cg_y_show(n->text, show, sizeof show));
    return buf;
}

/* "'K' in layer 'conv1'" — how messages name a field. */
static const char *label(const char *key, const char *where, char *buf, size_t size)
{
    snprintf(buf, size, "'%s'%s%s", key, *where ? " " : "", where);
    return buf;
}

/* "expected X for LABEL, got Y" */
static int type_error(const cg_yctx *c, const cg_ynode *n, const char *key, const char *where,
                      const char *expected)
{
    char lab[160], what[128];
    return cg_y_fail(c, n->pos, "expected %s for %s, got %s", expected,
                     label(key, where, lab, sizeof lab), cg_y_what(n, what, sizeof what));
}

const cg_ynode *cg_y_get(const cg_ynode *map, const char *key)
{
    if (map->kind != CG_Y_MAP) return NULL;
    for (size_t i = 0; i + 1 < map->n; i += 2)
        if (!strcmp(map->kids[i]->text, key)) return map->kids[i + 1];
    return NULL;
}

cg_pos cg_y_key_pos(const cg_ynode *map, const char *key)
{
    for (size_t i = 0; map->kind == CG_Y_MAP && i + 1 < map->n; i += 2)
        if (!strcmp(map->kids[i]->text, key)) return map->kids[i]->pos;
    return map->pos;
}

/* Case-insensitive edit distance of two short strings (Levenshtein). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[65];
    if (la > 64 || lb > 64) return (size_t)-1;
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t best = diag + cost;
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best, diag = up;
        }
    }
    return row[lb];
}

/* The nearest known word when it is plausibly a typo: at most two edits, and
 * at most half the length of the longer word. */
const char *cg_y_suggest(const char *s, const char *const *known)
{
    const char *best = NULL;
    size_t bd = (size_t)-1;
    for (int i = 0; known[i]; i++) {
        size_t d = edit_distance(s, known[i]);
        if (d < bd) bd = d, best = known[i];
    }
    if (!best) return NULL;
    size_t longer = strlen(s) > strlen(best) ? strlen(s) : strlen(best);
    return bd <= 2 && 2 * bd <= longer ? best : NULL;
}

/* "a, b or c" */
static void join_words(const char *const *w, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; w[i]; i++) {
        const char *sep = i == 0 ? "" : w[i + 1] ? ", " : " or ";
        int n = snprintf(buf + used, size - used, "%s%s", sep, w[i]);
        if (n < 0 || (size_t)n >= size - used) break;
        used += (size_t)n;
    }
}

int cg_y_int(const cg_yctx *c, const cg_ynode *n, const char *key, const char *where,
             long long lo, long long hi, long long *out)
{
    char expected[96], lab[160], show[80];
    snprintf(expected, sizeof expected, "an integer %lld..%lld", lo, hi);
    if (n->kind != CG_Y_SCALAR || !n->plain || !int_syntax(n->text))
        return type_error(c, n, key, where, expected);
    const char *s = n->text;
    int neg = *s == '-';
    if (*s == '-' || *s == '+') s++;
    if (s[0] == '0' && s[1])
        return cg_y_fail(c, n->pos, "%s: write integers in decimal without leading zeros, got %s",
                         label(key, where, lab, sizeof lab), cg_y_show(n->text, show, sizeof show));
    long long v = 0;
    int over = 0;
    for (; *s; s++) {
        int d = *s - '0';
        if (v > (LLONG_MAX - d) / 10) {
            over = 1;
            break;
        }
        v = v * 10 + d;
    }
    if (neg) v = -v;
    if (over || v < lo || v > hi)
        return cg_y_fail(c, n->pos, "%s is out of range: %s (expected %lld..%lld)",
                         label(key, where, lab, sizeof lab), cg_y_show(n->text, show, sizeof show),
                         lo, hi);
    *out = v;
    return 0;
}

int cg_y_u64(const cg_yctx *c, const cg_ynode *n, const char *key, const char *where,
             unsigned long long *out)
{
    char lab[160], show[80];
    if (n->kind != CG_Y_SCALAR || !n->plain || !int_syntax(n->text))
        return type_error(c, n, key, where, "an unsigned integer");
    const char *s = n->text;
    int over = *s == '-';
    if (*s == '-' || *s == '+') s++;
    if (s[0] == '0' && s[1])
        return cg_y_fail(c, n->pos, "%s: write integers in decimal without leading zeros, got %s",
                         label(key, where, lab, sizeof lab), cg_y_show(n->text, show, sizeof show));
    unsigned long long v = 0;
    for (; *s && !over; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (ULLONG_MAX - d) / 10) over = 1;
        else v = v * 10 + d;
    }
    if (over && strcmp(n->text, "-0"))
        return cg_y_fail(c, n->pos, "%s is out of range: %s (expected 0..%llu)",
                         label(key, where, lab, sizeof lab), cg_y_show(n->text, show, sizeof show),
                         ULLONG_MAX);
    *out = v;
    return 0;
}

int cg_y_float(const cg_yctx *c, const cg_ynode *n, const char *key, const char *where,
               double *out)
{
    char lab[160], show[80];
    if (n->kind != CG_Y_SCALAR || !n->plain || !num_syntax(n->text))
        return type_error(c, n, key, where, "a finite number");
    errno = 0;
    char *end;
    double v = strtod(n->text, &end);
    if (*end || errno == ERANGE || !isfinite(v))
        return cg_y_fail(c, n->pos, "%s is out of range: %s (expected a finite number)",
                         label(key, where, lab, sizeof lab), cg_y_show(n->text, show, sizeof show));
    *out = v;
    return 0;
}

int cg_y_bool(const cg_yctx *c, const cg_ynode *n, const char *key, const char *where, int *out)
{
    if (n->kind == CG_Y_SCALAR && n->plain && !strcmp(n->text, "true")) return *out = 1, 0;
    if (n->kind == CG_Y_SCALAR && n->plain && !strcmp(n->text, "false")) return *out = 0, 0;
    return type_error(c, n, key, where, "true or false");
}

int cg_y_str(const cg_yctx *c, const cg_ynode *n, const char *key, const char *where,
             char *out, size_t size)
{
    char lab[160];
    if (n->kind != CG_Y_SCALAR || is_null(n)) return type_error(c, n, key, where, "a string");
    if (n->len >= size)
        return cg_y_fail(c, n->pos, "%s is too long (%zu bytes, at most %zu)",
                         label(key, where, lab, sizeof lab), n->len, size - 1);
    memcpy(out, n->text, n->len + 1);
    return 0;
}

int cg_y_is_ident(const char *s, int dotted)
{
    int ok = dotted ? (islower((unsigned char)s[0]) || isdigit((unsigned char)s[0]))
                    : (islower((unsigned char)s[0]) || s[0] == '_');
    for (size_t i = 1; ok && s[i]; i++) {
        unsigned char b = (unsigned char)s[i];
        ok = islower(b) || isdigit(b) || b == '_' || (dotted && (b == '.' || b == '-'));
    }
    return ok;
}

int cg_y_ident(const cg_yctx *c, const cg_ynode *n, const char *key, const char *where,
               int dotted, char *out, size_t size)
{
    char lab[160], show[80];
    if (n->kind != CG_Y_SCALAR || is_null(n))
        return type_error(c, n, key, where, dotted ? "a name like ece408-2017" : "a name like conv1");
    if (!cg_y_is_ident(n->text, dotted))
        return cg_y_fail(c, n->pos, "%s must be a name matching %s, got '%s'",
                         label(key, where, lab, sizeof lab),
                         dotted ? "[a-z0-9][a-z0-9_.-]*" : "[a-z_][a-z0-9_]*",
                         cg_y_show(n->text, show, sizeof show));
    if (n->len >= size)
        return cg_y_fail(c, n->pos, "%s is too long (%zu characters, at most %zu)",
                         label(key, where, lab, sizeof lab), n->len, size - 1);
    memcpy(out, n->text, n->len + 1);
    return 0;
}

int cg_y_kind(const cg_yctx *c, const cg_ynode *n, cg_ykind kind, const char *key,
              const char *where, const char *expected)
{
    return n->kind == kind ? 0 : type_error(c, n, key, where, expected);
}

const cg_ynode *cg_y_require(const cg_yctx *c, const cg_ynode *map, const char *key,
                             const char *where, const char *hint)
{
    const cg_ynode *v = cg_y_get(map, key);
    if (!v)
        cg_y_fail(c, map->pos, "missing required key '%s' %s%s%s%s", key, where,
                  hint ? " (" : "", hint ? hint : "", hint ? ")" : "");
    return v;
}

int cg_y_enum(const cg_yctx *c, const cg_ynode *n, const char *key, const char *where,
              const char *const *choices, int *out)
{
    char words[160], expected[200], show[80];
    join_words(choices, words, sizeof words);
    if (n->kind != CG_Y_SCALAR || is_null(n)) {
        snprintf(expected, sizeof expected, "one of %s", words);
        return type_error(c, n, key, where, expected);
    }
    for (int i = 0; choices[i]; i++)
        if (!strcmp(n->text, choices[i])) return *out = i, 0;
    const char *near = cg_y_suggest(n->text, choices);
    if (near)
        return cg_y_fail(c, n->pos, "unknown %s '%s'%s%s (did you mean '%s'?)", key,
                         cg_y_show(n->text, show, sizeof show), *where ? " " : "", where, near);
    return cg_y_fail(c, n->pos, "unknown %s '%s'%s%s (expected %s)", key,
                     cg_y_show(n->text, show, sizeof show), *where ? " " : "", where, words);
}

int cg_y_check_keys(const cg_yctx *c, const cg_ynode *map, const char *const *known,
                    const char *where_unknown)
{
    char show[80], words[400];
    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const cg_ynode *k = map->kids[i];
        int found = 0;
        for (int j = 0; known[j] && !found; j++) found = !strcmp(k->text, known[j]);
        if (found) continue;
        const char *near = cg_y_suggest(k->text, known);
        if (near)
            return cg_y_fail(c, k->pos, "unknown key '%s' %s (did you mean '%s'?)",
                             cg_y_show(k->text, show, sizeof show), where_unknown, near);
        join_words(known, words, sizeof words);
        return cg_y_fail(c, k->pos, "unknown key '%s' %s (expected %s)",
                         cg_y_show(k->text, show, sizeof show), where_unknown, words);
    }
    return 0;
}
