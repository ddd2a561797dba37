#include "json.h"

#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>

/* Nesting this deep is never a safetensors header; refusing it keeps the
 * recursion bounded on hostile input. */
#define MAX_DEPTH 32

typedef struct {
  const char *text;
  size_t len, pos;
  char *error;
} parser;

static int
fail(parser *p, const char *what)
{
  if (!p->error)
    p->error = g_strdup_printf("%s at byte %zu of the header", what, p->pos);
  return -EINVAL;
}

static void
skip_space(parser *p)
{
  while (p->pos < p->len && strchr(" \t\r\n", p->text[p->pos]) && p->text[p->pos])
    p->pos++;
}

static int
expect_literal(parser *p, const char *word)
{
  const size_t n = strlen(word);
  if (p->len - p->pos < n || memcmp(p->text + p->pos, word, n) != 0)
    return fail(p, "invalid literal");
  p->pos += n;
  return 0;
}

static int
hex4(parser *p, unsigned *value)
{
  *value = 0;
  for (int i = 0; i < 4; i++) {
    if (p->pos >= p->len || !g_ascii_isxdigit(p->text[p->pos]))
      return fail(p, "bad \\u escape");
    *value = *value * 16 + g_ascii_xdigit_value(p->text[p->pos++]);
  }
  return 0;
}

static int
parse_string(parser *p, char **out)
{
  GString *s = g_string_new(NULL);
  p->pos++; /* opening quote */
  while (p->pos < p->len) {
    const unsigned char c = p->text[p->pos++];
    if (c == '"') {
      if (!g_utf8_validate(s->str, s->len, NULL)) {
        g_string_free(s, TRUE);
        return fail(p, "string is not valid UTF-8");
      }
      *out = g_string_free(s, FALSE);
      return 0;
    }
    if (c < 0x20)
      break;
    if (c != '\\') {
      g_string_append_c(s, c);
      continue;
    }
    if (p->pos >= p->len)
      break;
    const char e = p->text[p->pos++];
    const char *simple = strchr("\"\\/bfnrt", e);
    if (simple && e) {
      static const char decoded[] = "\"\\/\b\f\n\r\t";
      g_string_append_c(s, decoded[simple - "\"\\/bfnrt"]);
    } else if (e == 'u') {
      unsigned cp;
      if (hex4(p, &cp) < 0)
        goto error;
      if (cp >= 0xD800 && cp < 0xDC00) { /* surrogate pair */
        unsigned low;
        if (p->len - p->pos < 2 || p->text[p->pos] != '\\' || p->text[p->pos + 1] != 'u')
          goto bad_escape;
        p->pos += 2;
        if (hex4(p, &low) < 0)
          goto error;
        if (low < 0xDC00 || low > 0xDFFF)
          goto bad_escape;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        goto bad_escape;
      }
      g_string_append_unichar(s, cp);
    } else {
      goto bad_escape;
    }
  }
  g_string_free(s, TRUE);
  return fail(p, "unterminated string");
bad_escape:
  fail(p, "bad escape in string");
error:
  g_string_free(s, TRUE);
  return -EINVAL;
}

static int
parse_number(parser *p, pp_json *node)
{
  const size_t start = p->pos;
  int integer = 1;
  if (p->text[p->pos] == '-')
    p->pos++;
  if (p->pos >= p->len || !g_ascii_isdigit(p->text[p->pos]))
    return fail(p, "bad number");
  if (p->text[p->pos] == '0' && p->pos + 1 < p->len && g_ascii_isdigit(p->text[p->pos + 1]))
    return fail(p, "number with a leading zero");
  while (p->pos < p->len && g_ascii_isdigit(p->text[p->pos]))
    p->pos++;
  if (p->pos < p->len && p->text[p->pos] == '.') {
    integer = 0;
    p->pos++;
    if (p->pos >= p->len || !g_ascii_isdigit(p->text[p->pos]))
      return fail(p, "bad number");
    while (p->pos < p->len && g_ascii_isdigit(p->text[p->pos]))
      p->pos++;
  }
  if (p->pos < p->len && (p->text[p->pos] == 'e' || p->text[p->pos] == 'E')) {
    integer = 0;
    p->pos++;
    if (p->pos < p->len && (p->text[p->pos] == '+' || p->text[p->pos] == '-'))
      p->pos++;
    if (p->pos >= p->len || !g_ascii_isdigit(p->text[p->pos]))
      return fail(p, "bad number");
    while (p->pos < p->len && g_ascii_isdigit(p->text[p->pos]))
      p->pos++;
  }
  char *copy = g_strndup(p->text + start, p->pos - start);
  node->type = PP_JSON_NUMBER;
  node->number = g_ascii_strtod(copy, NULL);
  if (integer) {
    char *end;
    errno = 0;
    node->integer = g_ascii_strtoll(copy, &end, 10);
    node->is_integer = errno == 0;
  }
  g_free(copy);
  return 0;
}

static int parse_value(parser *p, pp_json *node, int depth);

static int
append_item(parser *p, pp_json *parent, char *key, int depth)
{
  pp_json *child = g_new0(pp_json, 1);
  child->key = key;
  parent->items = g_renew(pp_json *, parent->items, parent->n_items + 1);
  parent->items[parent->n_items++] = child;
  return parse_value(p, child, depth + 1);
}

static int
parse_container(parser *p, pp_json *node, int depth)
{
  const int object = p->text[p->pos] == '{';
  const char close = object ? '}' : ']';
  node->type = object ? PP_JSON_OBJECT : PP_JSON_ARRAY;
  p->pos++;
  skip_space(p);
  if (p->pos < p->len && p->text[p->pos] == close) {
    p->pos++;
    return 0;
  }
  for (;;) {
    char *key = NULL;
    skip_space(p);
    if (object) {
      if (p->pos >= p->len || p->text[p->pos] != '"')
        return fail(p, "expected a member name");
      if (parse_string(p, &key) < 0)
        return -EINVAL;
      if (pp_json_member(node, key)) {
        g_free(key);
        return fail(p, "duplicate member name");
      }
      skip_space(p);
      if (p->pos >= p->len || p->text[p->pos] != ':') {
        g_free(key);
        return fail(p, "expected ':'");
      }
      p->pos++;
    }
    if (append_item(p, node, key, depth) < 0)
      return -EINVAL;
    skip_space(p);
    if (p->pos < p->len && p->text[p->pos] == ',') {
      p->pos++;
      continue;
    }
    if (p->pos < p->len && p->text[p->pos] == close) {
      p->pos++;
      return 0;
    }
    return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static int
parse_value(parser *p, pp_json *node, int depth)
{
  if (depth > MAX_DEPTH)
    return fail(p, "nesting too deep");
  skip_space(p);
  if (p->pos >= p->len)
    return fail(p, "unexpected end");
  switch (p->text[p->pos]) {
    case '{':
    case '[':
      return parse_container(p, node, depth);
    case '"':
      node->type = PP_JSON_STRING;
      return parse_string(p, &node->string);
    case 't':
      node->type = PP_JSON_BOOL;
      node->boolean = 1;
      return expect_literal(p, "true");
    case 'f':
      node->type = PP_JSON_BOOL;
      return expect_literal(p, "false");
    case 'n':
      node->type = PP_JSON_NULL;
      return expect_literal(p, "null");
    default:
      return parse_number(p, node);
  }
}

int
pp_json_parse(const char *text, size_t len, pp_json **out, char **msg)
{
  parser p = { .text = text, .len = len };
  pp_json *root = g_new0(pp_json, 1);
  int rc = parse_value(&p, root, 0);
  if (rc == 0) {
    skip_space(&p);
    if (p.pos != p.len)
      rc = fail(&p, "unexpected data after the JSON value");
  }
  if (rc < 0) {
    pp_json_free(root);
    if (msg)
      *msg = p.error;
    else
      g_free(p.error);
    return rc;
  }
  *out = root;
  return 0;
}

void
pp_json_free(pp_json *node)
{
  if (!node)
    return;
  for (size_t i = 0; i < node->n_items; i++)
    pp_json_free(node->items[i]);
  g_free(node->items);
  g_free(node->key);
  g_free(node->string);
  g_free(node);
}

const pp_json *
pp_json_member(const pp_json *object, const char *key)
{
  if (!object || object->type != PP_JSON_OBJECT)
    return NULL;
  for (size_t i = 0; i < object->n_items; i++)
    if (strcmp(object->items[i]->key, key) == 0)
      return object->items[i];
  return NULL;
}
