// SPDX-License-Identifier: LGPL-2.1-or-later
/* The safetensors reader: the header parsed and each tensor's bytes located
 * and converted. */
#include "safetensors.h"
#include "error.h"

#include <errno.h>
#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <string.h>

/* The reference implementation refuses headers above 100 MB. */
#define MAX_HEADER_BYTES (100u * 1000 * 1000)
/* A safetensors header nests three deep; json-glib recurses once per level
 * and has no limit of its own (100,000 levels overflow its stack). */
#define MAX_NESTING 32

static const struct {
  const char *name;
  unsigned size;
  pp_dtype dtype;
} known_dtypes[] = {
  { "F32", 4, PP_DTYPE_F32 },    { "F16", 2, PP_DTYPE_F16 },       { "BF16", 2, PP_DTYPE_BF16 },
  { "F64", 8, PP_DTYPE_OTHER },  { "I64", 8, PP_DTYPE_OTHER },     { "I32", 4, PP_DTYPE_OTHER },
  { "I16", 2, PP_DTYPE_OTHER },  { "I8", 1, PP_DTYPE_OTHER },      { "U64", 8, PP_DTYPE_OTHER },
  { "U32", 4, PP_DTYPE_OTHER },  { "U16", 2, PP_DTYPE_OTHER },     { "U8", 1, PP_DTYPE_OTHER },
  { "BOOL", 1, PP_DTYPE_OTHER }, { "F8_E4M3", 1, PP_DTYPE_OTHER }, { "F8_E5M2", 1, PP_DTYPE_OTHER },
};

typedef struct {
  uint64_t begin, end;
  const char *name;
} byte_range;

/* An integer ≥ 0. json-glib reads integers past 64 bits as -1 or INT64_MIN
 * (refused here), and one below INT64_MIN as INT64_MAX, which no byte range
 * or shape below survives. */
static int
read_u64(JsonNode *node, uint64_t *value)
{
  if (!node || !JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_INT64 ||
      json_node_get_int(node) < 0)
    return -EINVAL;
  *value = (uint64_t) json_node_get_int(node);
  return 0;
}

static JsonNode *
member_of_type(JsonObject *object, const char *name, JsonNodeType type)
{
  JsonNode *node = json_object_get_member(object, name);
  return node && JSON_NODE_TYPE(node) == type ? node : NULL;
}

static int
parse_tensor(JsonNode *entry, pp_st_tensor *t, char **msg)
{
  if (!JSON_NODE_HOLDS_OBJECT(entry))
    return pp_error(msg, EINVAL, "header entry '%s' is not an object", t->name);

  JsonObject *object = json_node_get_object(entry);
  JsonNode *dtype = member_of_type(object, "dtype", JSON_NODE_VALUE);
  JsonNode *shape_node = member_of_type(object, "shape", JSON_NODE_ARRAY);
  JsonNode *offsets_node = member_of_type(object, "data_offsets", JSON_NODE_ARRAY);
  if (!dtype || json_node_get_value_type(dtype) != G_TYPE_STRING)
    return pp_error(msg, EINVAL, "tensor '%s' has no \"dtype\" string", t->name);
  if (!shape_node)
    return pp_error(msg, EINVAL, "tensor '%s' has no \"shape\" array", t->name);
  JsonArray *offsets = offsets_node ? json_node_get_array(offsets_node) : NULL;
  if (!offsets || json_array_get_length(offsets) != 2)
    return pp_error(msg, EINVAL, "tensor '%s' has no \"data_offsets\" pair", t->name);

  const char *dtype_name = json_node_get_string(dtype);
  unsigned elem_size = 0;
  for (size_t i = 0; i < G_N_ELEMENTS(known_dtypes); i++) {
    if (strcmp(dtype_name, known_dtypes[i].name) == 0) {
      elem_size = known_dtypes[i].size;
      t->dtype = known_dtypes[i].dtype;
    }
  }
  if (!elem_size)
    return pp_error(msg, EINVAL, "tensor '%s' has unknown dtype '%s'", t->name, dtype_name);
  t->dtype_name = g_strdup(dtype_name);

  JsonArray *shape = json_node_get_array(shape_node);
  const unsigned rank = json_array_get_length(shape);
  if (rank > PP_ST_MAX_RANK)
    return pp_error(msg, EINVAL, "tensor '%s' has rank %u; at most %d is supported", t->name, rank,
                    PP_ST_MAX_RANK);
  t->rank = rank;
  t->elements = 1;
  for (uint32_t i = 0; i < t->rank; i++) {
    if (read_u64(json_array_get_element(shape, i), &t->shape[i]) < 0)
      return pp_error(msg, EINVAL,
                      "tensor '%s' has a shape entry that is not a non-negative integer", t->name);
    if (t->shape[i] && t->elements > UINT64_MAX / t->shape[i] / elem_size)
      return pp_error(msg, EINVAL, "tensor '%s' has a shape too large to address", t->name);
    t->elements *= t->shape[i];
  }

  uint64_t begin, end;
  if (read_u64(json_array_get_element(offsets, 0), &begin) < 0 ||
      read_u64(json_array_get_element(offsets, 1), &end) < 0 || end < begin)
    return pp_error(msg, EINVAL,
                    "tensor '%s' has data_offsets that are not an ordered pair of integers",
                    t->name);
  t->bytes = end - begin;
  if (t->bytes != t->elements * elem_size) {
    g_autofree char *dims = pp_st_shape_string(t);
    return pp_error(msg, EINVAL,
                    "tensor '%s' is %s %s, which needs %" G_GUINT64_FORMAT
                    " bytes, but its data_offsets [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                    ") span %" G_GUINT64_FORMAT,
                    t->name, dims, t->dtype_name, t->elements * elem_size, begin, end, t->bytes);
  }
  t->offset = begin;
  return 0;
}

static int
compare_ranges(const void *a, const void *b)
{
  const byte_range *x = a, *y = b;
  return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* Every byte of the data section belongs to exactly one tensor, as the format
 * requires: no overlaps, no holes, nothing past the end. */
static int
check_coverage(pp_safetensors *st, uint64_t data_len, char **msg)
{
  byte_range *ranges = g_new(byte_range, st->n_tensors);
  int rc = 0;
  for (size_t i = 0; i < st->n_tensors; i++) {
    const pp_st_tensor *t = &st->tensors[i];
    ranges[i] = (byte_range){ t->offset, t->offset + t->bytes, t->name };
    if (ranges[i].end > data_len) {
      rc = pp_error(msg, EINVAL,
                    "tensor '%s' has bytes [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                    ") but the data section holds only %" G_GUINT64_FORMAT
                    " bytes: the file is truncated or its header is wrong",
                    ranges[i].name, ranges[i].begin, ranges[i].end, data_len);
      goto out;
    }
  }
  if (st->n_tensors > 1)
    qsort(ranges, st->n_tensors, sizeof *ranges, compare_ranges);
  uint64_t covered = 0;
  for (size_t i = 0; i < st->n_tensors; i++) {
    if (ranges[i].begin < covered) {
      rc = pp_error(msg, EINVAL, "tensors '%s' and '%s' overlap in the data section",
                    ranges[i - 1].name, ranges[i].name);
      goto out;
    }
    if (ranges[i].begin > covered) {
      rc = pp_error(msg, EINVAL,
                    "bytes [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                    ") of the data section belong to no tensor",
                    covered, ranges[i].begin);
      goto out;
    }
    covered = ranges[i].end;
  }
  if (covered != data_len)
    rc = pp_error(msg, EINVAL,
                  "the data section has %" G_GUINT64_FORMAT
                  " bytes after the last tensor that belong to no tensor",
                  data_len - covered);
out:
  g_free(ranges);
  return rc;
}

static int
read_metadata(JsonNode *node, pp_safetensors *st, char **msg)
{
  if (!JSON_NODE_HOLDS_OBJECT(node))
    return pp_error(msg, EINVAL, "\"__metadata__\" is not an object");
  JsonObject *meta = json_node_get_object(node);
  g_autoptr(GList) keys = json_object_get_members(meta); /* in file order */
  for (GList *k = keys; k; k = k->next) {
    JsonNode *value = json_object_get_member(meta, k->data);
    if (!JSON_NODE_HOLDS_VALUE(value) || json_node_get_value_type(value) != G_TYPE_STRING)
      return pp_error(msg, EINVAL, "\"__metadata__\" value '%s' is not a string", (char *) k->data);
  }
  const unsigned n = g_list_length(keys);
  st->meta_keys = g_new0(char *, n + 1);
  st->meta_values = g_new0(char *, n + 1);
  unsigned i = 0;
  for (GList *k = keys; k; k = k->next, i++) {
    st->meta_keys[i] = g_strdup(k->data);
    st->meta_values[i] = g_strdup(json_object_get_string_member(meta, k->data));
  }
  st->n_meta = n;
  return 0;
}

/* Refuses nesting deeper than MAX_NESTING before json-glib sees the text.
 * Brackets inside double-quoted strings do not count. */
static int
check_nesting(const char *text, size_t len, char **msg)
{
  unsigned depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < len; i++) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        i++;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > MAX_NESTING)
        return pp_error(msg, EINVAL,
                        "the header is not valid JSON: nested deeper than %d levels at byte %zu",
                        MAX_NESTING, i);
    } else if ((c == ']' || c == '}') && depth > 0) {
      depth--;
    }
  }
  return 0;
}

/* json-glib keeps the last of two members with one name, silently; the
 * format forbids them. Its object-member signal comes after each member
 * is stored: a count of signals above the object's size is a repeat. */
typedef struct {
  GHashTable *seen; /* JsonObject → members signalled so far */
  char *duplicate;  /* the first name seen twice */
} duplicate_check;

static void
on_object_member(JsonParser *parser, JsonObject *object, const char *name, gpointer data)
{
  (void) parser;
  duplicate_check *check = data;
  const guint count = GPOINTER_TO_UINT(g_hash_table_lookup(check->seen, object)) + 1;
  g_hash_table_insert(check->seen, object, GUINT_TO_POINTER(count));
  if (count > json_object_get_size(object) && !check->duplicate)
    check->duplicate = g_strdup(name);
}

/* The header's root object, or NULL with a message. */
static JsonParser *
parse_header(const char *text, size_t len, char **msg)
{
  if (check_nesting(text, len, msg) < 0)
    return NULL;
  JsonParser *parser = json_parser_new_immutable();
  duplicate_check check = { g_hash_table_new(NULL, NULL), NULL };
  g_signal_connect(parser, "object-member", G_CALLBACK(on_object_member), &check);
  GError *error = NULL;
  const gboolean parsed = json_parser_load_from_data(parser, text, (gssize) len, &error);
  g_signal_handlers_disconnect_by_data(parser, &check);
  g_hash_table_destroy(check.seen);
  JsonNode *root = parsed ? json_parser_get_root(parser) : NULL;
  bool ok = false;
  if (!parsed)
    pp_error(msg, EINVAL, "the header is not valid JSON: %s", error->message);
  else if (check.duplicate)
    pp_error(msg, EINVAL, "the header is not valid JSON: duplicate member name '%s'",
             check.duplicate);
  else if (!root || !JSON_NODE_HOLDS_OBJECT(root))
    pp_error(msg, EINVAL, "the header is not a JSON object");
  else
    ok = true;
  g_clear_error(&error);
  g_free(check.duplicate);
  if (!ok)
    g_clear_object(&parser);
  return parser;
}

int
pp_safetensors_parse(const uint8_t *file, size_t len, pp_safetensors **out, char **msg)
{
  if (len < 8)
    return pp_error(msg, EINVAL,
                    "the file has %zu bytes, fewer than the 8 of a safetensors header length", len);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; i--)
    header_len = header_len << 8 | file[i];
  if (header_len > len - 8)
    return pp_error(msg, EINVAL,
                    "the header length %" G_GUINT64_FORMAT
                    " runs past the end of the file (%zu bytes): truncated, or not a "
                    "safetensors file",
                    header_len, len);
  if (header_len == 0)
    return pp_error(msg, EINVAL,
                    "the header is empty (its length is 0): not a safetensors file, or one "
                    "written without its tensors' names and shapes");
  if (header_len > MAX_HEADER_BYTES)
    return pp_error(msg, EINVAL,
                    "the header is %" G_GUINT64_FORMAT " bytes; at most %u are accepted",
                    header_len, MAX_HEADER_BYTES);

  JsonParser *parser = parse_header((const char *) file + 8, header_len, msg);
  if (!parser)
    return -EINVAL;
  JsonObject *root = json_node_get_object(json_parser_get_root(parser));
  pp_safetensors *st = g_new0(pp_safetensors, 1);
  int rc = 0;
  g_autoptr(GList) names = json_object_get_members(root); /* in file order */
  st->tensors = g_new0(pp_st_tensor, g_list_length(names));
  for (GList *n = names; n && rc == 0; n = n->next) {
    JsonNode *entry = json_object_get_member(root, n->data);
    if (strcmp(n->data, "__metadata__") == 0) {
      rc = read_metadata(entry, st, msg);
      continue;
    }
    pp_st_tensor *t = &st->tensors[st->n_tensors++];
    t->name = g_strdup(n->data);
    rc = parse_tensor(entry, t, msg);
  }
  const uint64_t data_len = len - 8 - header_len;
  if (rc == 0)
    rc = check_coverage(st, data_len, msg);
  if (rc == 0) {
    const uint8_t *data = file + 8 + header_len;
    for (size_t i = 0; i < st->n_tensors; i++)
      st->tensors[i].data = data + st->tensors[i].offset;
  }
  g_object_unref(parser);
  if (rc < 0) {
    pp_safetensors_free(st);
    return rc;
  }
  *out = st;
  return 0;
}

void
pp_safetensors_free(pp_safetensors *st)
{
  if (!st)
    return;
  for (size_t i = 0; i < st->n_tensors; i++) {
    g_free(st->tensors[i].name);
    g_free(st->tensors[i].dtype_name);
  }
  g_free(st->tensors);
  g_strfreev(st->meta_keys);
  g_strfreev(st->meta_values);
  g_free(st);
}

const char *
pp_safetensors_metadata(const pp_safetensors *st, const char *key)
{
  for (size_t i = 0; i < st->n_meta; i++)
    if (strcmp(st->meta_keys[i], key) == 0)
      return st->meta_values[i];
  return NULL;
}

void
pp_st_tensor_to_f32(const pp_st_tensor *t, float *dst)
{
  const uint8_t *src = t->data;
  for (uint64_t i = 0; i < t->elements; i++) {
    uint32_t bits;
    switch (t->dtype) {
      case PP_DTYPE_F32:
        bits = (uint32_t) src[4 * i] | (uint32_t) src[4 * i + 1] << 8 |
               (uint32_t) src[4 * i + 2] << 16 | (uint32_t) src[4 * i + 3] << 24;
        memcpy(&dst[i], &bits, sizeof bits);
        break;
      case PP_DTYPE_F16:
      case PP_DTYPE_BF16:
        dst[i] = pp_dtype_from_bits(t->dtype, (uint16_t) (src[2 * i] | src[2 * i + 1] << 8));
        break;
      default: /* PP_DTYPE_OTHER: never asked for */
        g_return_if_reached();
    }
  }
}

char *
pp_st_shape_string(const pp_st_tensor *t)
{
  GString *s = g_string_new(NULL);
  for (uint32_t i = 0; i < t->rank; i++)
    g_string_append_printf(s, "%s%" G_GUINT64_FORMAT, i ? "×" : "", t->shape[i]);
  if (t->rank == 0)
    g_string_append(s, "a scalar");
  return g_string_free(s, FALSE);
}
