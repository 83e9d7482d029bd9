/* spec_yaml.c — turns spec text into a small tree with libyaml's event parser.
 * Everything YAML can do that a spec never needs (anchors, aliases, tags, several
 * documents, deep nesting) is refused here, before any of it can cost memory. */
#include "spec_yaml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* Every error of the spec reader goes through here, so all of them have the
 * same "FILE:LINE:COL: message" shape. */
int cg_y_fail(const cg_yctx *c, cg_pos p, const char *fmt, ...)
{
    char msg[CG_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return cg_fail(c->e, "%s:%d:%d: %s", c->file, p.line, p.col, msg);
}

/* libyaml marks are 0-based; we print 1-based. */
static cg_pos mark_pos(yaml_mark_t m)
{
    cg_pos p = {(int)m.line + 1, (int)m.column + 1};
    return p;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is invalid
 * (truncated, overlong, a surrogate, or beyond U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t left)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t need;
    unsigned cp;
    if (c < 0xC2) return 0;
    if (c < 0xE0) need = 2, cp = c & 0x1F;
    else if (c < 0xF0) need = 3, cp = c & 0x0F;
    else if (c < 0xF5) need = 4, cp = c & 0x07;
    else return 0;
    if (left < need) return 0;
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (need == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
    if (need == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
    return need;
}

/* Refuses NUL bytes, control characters and invalid UTF-8 with the position of
 * the first bad byte; libyaml's own reader errors carry no line or column. */
static int check_bytes(const cg_yctx *c, const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    cg_pos p = {1, 1};
    /* the binary files a spec is most often confused with, named before their first odd byte is */
    if (len >= 6 && !memcmp(s, "\x93NUMPY", 6))
        return cg_y_fail(c, p, "this looks like a NumPy .npy file, not a spec (specs are YAML text; "
                               "images go in --input FILE)");
    if (len >= 2 && s[0] == 0x1f && s[1] == 0x8b)
        return cg_y_fail(c, p, "this looks like a gzip file, not a spec (specs are YAML text; "
                               "images go in --input FILE or --data DIR)");
    if (len >= 4 && !s[0] && !s[1] && s[2] == 0x08 && (s[3] == 1 || s[3] == 3))
        return cg_y_fail(c, p, "this looks like an IDX file, not a spec (specs are YAML text; "
                               "images go in --input FILE or --data DIR)");
    for (size_t i = 0; i < len;) {
        unsigned b = s[i];
        if (b == 0)
            return cg_y_fail(c, p, "NUL byte in spec (specs are UTF-8 text)");
        if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7F)
            return cg_y_fail(c, p, "control character 0x%02x is not allowed in specs", b);
        size_t n = utf8_seq(s + i, len - i);
        if (!n) return cg_y_fail(c, p, "invalid UTF-8 byte 0x%02x (specs are UTF-8 text)", b);
        if (b == '\n') p.line++, p.col = 1;
        else p.col++;
        i += n;
    }
    return 0;
}

/* Line and column of a byte offset, for libyaml reader errors (which only give
 * the offset). */
static cg_pos offset_pos(const char *text, size_t len, size_t off)
{
    cg_pos p = {1, 1};
    for (size_t i = 0; i < off && i < len; i++) {
        unsigned char b = (unsigned char)text[i];
        if (b == '\n') p.line++, p.col = 1;
        else if ((b & 0xC0) != 0x80) p.col++;
    }
    return p;
}

/* Frees a node and everything under it (depth is bounded, so recursion is safe). */
void cg_yaml_free(cg_ynode *n)
{
    if (!n) return;
    for (size_t i = 0; i < n->n; i++) cg_yaml_free(n->kids[i]);
    free(n->kids);
    free(n->text);
    free(n);
}

/* Appends a child to a mapping or sequence, refusing duplicate keys and
 * collections that could only be an attack or a mistake by their size. */
static int add_kid(const cg_yctx *c, cg_ynode *parent, cg_ynode *kid)
{
    int is_key = parent->kind == CG_Y_MAP && parent->n % 2 == 0;
    size_t limit = parent->kind == CG_Y_MAP ? 2 * CG_SPEC_ENTRIES_MAX : CG_SPEC_ENTRIES_MAX;
    if (parent->n >= limit)
        return cg_y_fail(c, kid->pos, "more than %d entries in one %s", CG_SPEC_ENTRIES_MAX,
                         parent->kind == CG_Y_MAP ? "mapping" : "sequence");
    if (is_key) {
        if (kid->kind != CG_Y_SCALAR)
            return cg_y_fail(c, kid->pos, "mapping keys must be plain names, got %s",
                             kid->kind == CG_Y_MAP ? "a mapping" : "a sequence");
        for (size_t i = 0; i < parent->n; i += 2) {
            const cg_ynode *k = parent->kids[i];
            if (k->len == kid->len && !memcmp(k->text, kid->text, k->len)) {
                char show[96];
                return cg_y_fail(c, kid->pos, "duplicate key '%s' (first at %d:%d)",
                                 cg_y_show(kid->text, show, sizeof show), k->pos.line,
                                 k->pos.col);
            }
        }
    }
    if (parent->n == parent->cap) {
        size_t cap = parent->cap ? parent->cap * 2 : 8;
        cg_ynode **k = realloc(parent->kids, cap * sizeof *k);
        if (!k) return cg_y_fail(c, kid->pos, "out of memory");
        parent->kids = k, parent->cap = cap;
    }
    parent->kids[parent->n++] = kid;
    return 0;
}

/* Anchors, aliases and tags are refused wherever they appear: aliases make
 * "billion laughs" bombs possible and tags could change what a value means. */
static int check_event(const cg_yctx *c, const yaml_event_t *ev)
{
    const yaml_char_t *anchor = NULL, *tag = NULL;
    switch (ev->type) {
    case YAML_ALIAS_EVENT: anchor = ev->data.alias.anchor; break;
    case YAML_SCALAR_EVENT:
        anchor = ev->data.scalar.anchor, tag = ev->data.scalar.tag;
        break;
    case YAML_SEQUENCE_START_EVENT:
        anchor = ev->data.sequence_start.anchor, tag = ev->data.sequence_start.tag;
        break;
    case YAML_MAPPING_START_EVENT:
        anchor = ev->data.mapping_start.anchor, tag = ev->data.mapping_start.tag;
        break;
    default: return 0;
    }
    if (ev->type == YAML_ALIAS_EVENT || anchor)
        return cg_y_fail(c, mark_pos(ev->start_mark), "anchors and aliases are not allowed in specs");
    if (tag) {
        char show[96];
        return cg_y_fail(c, mark_pos(ev->start_mark), "tags (%s) are not allowed in specs",
                         cg_y_show((const char *)tag, show, sizeof show));
    }
    return 0;
}

/* One node from a scalar or collection-start event. */
static cg_ynode *new_node(const yaml_event_t *ev)
{
    cg_ynode *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->pos = mark_pos(ev->start_mark);
    if (ev->type == YAML_SCALAR_EVENT) {
        n->kind = CG_Y_SCALAR;
        n->len = ev->data.scalar.length;
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        n->text = malloc(n->len + 1);
        if (!n->text) {
            free(n);
            return NULL;
        }
        memcpy(n->text, ev->data.scalar.value, n->len);
        n->text[n->len] = 0;
    } else {
        n->kind = ev->type == YAML_MAPPING_START_EVENT ? CG_Y_MAP : CG_Y_SEQ;
    }
    return n;
}

/* libyaml's syntax error, with its problem position and its context. */
static int syntax_error(const cg_yctx *c, const yaml_parser_t *p, const char *text, size_t len)
{
    if (p->error == YAML_MEMORY_ERROR) {
        cg_pos one = {1, 1};
        return cg_y_fail(c, one, "out of memory while reading YAML");
    }
    const char *problem = p->problem ? p->problem : "unknown error";
    if (p->error == YAML_READER_ERROR)
        return cg_y_fail(c, offset_pos(text, len, p->problem_offset), "YAML syntax error: %s",
                         problem);
    if (p->context)
        return cg_y_fail(c, mark_pos(p->problem_mark), "YAML syntax error: %s (%s at %d:%d)",
                         problem, p->context, (int)p->context_mark.line + 1,
                         (int)p->context_mark.column + 1);
    return cg_y_fail(c, mark_pos(p->problem_mark), "YAML syntax error: %s", problem);
}

/* Handles one parser event: builds nodes, keeps the stack of open collections. */
static int on_event(const cg_yctx *c, const yaml_event_t *ev, cg_ynode **root,
                    cg_ynode **stack, int *depth, int *ndocs)
{
    if (check_event(c, ev)) return -1;
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++*ndocs > 1)
            return cg_y_fail(c, mark_pos(ev->start_mark),
                             "multiple YAML documents in one spec (a spec is one document)");
        return 0;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: --*depth; return 0;
    case YAML_SCALAR_EVENT:
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: break;
    default: return 0;
    }
    int collection = ev->type != YAML_SCALAR_EVENT;
    if (collection && *depth >= CG_SPEC_DEPTH_MAX)
        return cg_y_fail(c, mark_pos(ev->start_mark),
                         "nesting deeper than %d levels (a spec needs at most 4)",
                         CG_SPEC_DEPTH_MAX);
    if (ev->type == YAML_SCALAR_EVENT && memchr(ev->data.scalar.value, 0, ev->data.scalar.length))
        return cg_y_fail(c, mark_pos(ev->start_mark), "NUL character in a string");
    cg_ynode *n = new_node(ev);
    if (!n) return cg_y_fail(c, mark_pos(ev->start_mark), "out of memory");
    if (*depth == 0) {
        *root = n;
    } else if (add_kid(c, stack[*depth - 1], n)) {
        cg_yaml_free(n);
        return -1;
    }
    if (collection) stack[(*depth)++] = n;
    return 0;
}

/* Parses text into a tree; see spec_yaml.h for what is refused. */
int cg_yaml_load(const cg_yctx *c, const char *text, size_t len, cg_ynode **root)
{
    *root = NULL;
    if (len > CG_SPEC_BYTES_MAX) {
        cg_pos one = {1, 1};
        return cg_y_fail(c, one, "spec is %zu bytes, larger than the 1 MiB limit", len);
    }
    if (check_bytes(c, text, len)) return -1;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        cg_pos one = {1, 1};
        return cg_y_fail(c, one, "out of memory (YAML parser)");
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    yaml_parser_set_encoding(&p, YAML_UTF8_ENCODING);
    cg_ynode *stack[CG_SPEC_DEPTH_MAX];
    int depth = 0, ndocs = 0, rc = 0, done = 0;
    while (!done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = syntax_error(c, &p, text, len);
            break;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        rc = on_event(c, &ev, root, stack, &depth, &ndocs);
        yaml_event_delete(&ev);
        if (rc) break;
    }
    yaml_parser_delete(&p);
    if (rc) {
        cg_yaml_free(*root);
        *root = NULL;
    }
    return rc;
}
