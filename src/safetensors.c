#include "safetensors.h"

#include <errno.h>
#include <glib.h>
#include <string.h>

#include "json.h"

/* The reference implementation refuses headers above 100 MB. */
#define MAX_HEADER_BYTES (100u * 1000 * 1000)

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

static int set_error(char **msg, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static int
set_error(char **msg, const char *fmt, ...)
{
  if (msg) {
    va_list args;
    va_start(args, fmt);
    *msg = g_strdup_vprintf(fmt, args);
    va_end(args);
  }
  return -EINVAL;
}

static int
read_u64(const pp_json *node, uint64_t *value)
{
  if (!node || node->type != PP_JSON_NUMBER || !node->is_integer || node->integer < 0)
    return -EINVAL;
  *value = (uint64_t) node->integer;
  return 0;
}

static int
parse_tensor(const pp_json *entry, pp_st_tensor *t, char **msg)
{
  if (entry->type != PP_JSON_OBJECT)
    return set_error(msg, "header entry '%s' is not an object", entry->key);

  const pp_json *dtype = pp_json_member(entry, "dtype");
  const pp_json *shape = pp_json_member(entry, "shape");
  const pp_json *offsets = pp_json_member(entry, "data_offsets");
  if (!dtype || dtype->type != PP_JSON_STRING)
    return set_error(msg, "tensor '%s' has no \"dtype\" string", t->name);
  if (!shape || shape->type != PP_JSON_ARRAY)
    return set_error(msg, "tensor '%s' has no \"shape\" array", t->name);
  if (!offsets || offsets->type != PP_JSON_ARRAY || offsets->n_items != 2)
    return set_error(msg, "tensor '%s' has no \"data_offsets\" pair", t->name);

  unsigned elem_size = 0;
  for (size_t i = 0; i < G_N_ELEMENTS(known_dtypes); i++) {
    if (strcmp(dtype->string, known_dtypes[i].name) == 0) {
      elem_size = known_dtypes[i].size;
      t->dtype = known_dtypes[i].dtype;
    }
  }
  if (!elem_size)
    return set_error(msg, "tensor '%s' has unknown dtype '%s'", t->name, dtype->string);
  t->dtype_name = g_strdup(dtype->string);

  if (shape->n_items > PP_ST_MAX_RANK)
    return set_error(msg, "tensor '%s' has rank %zu; at most %d is supported", t->name,
                     shape->n_items, PP_ST_MAX_RANK);
  t->rank = shape->n_items;
  t->elements = 1;
  for (uint32_t i = 0; i < t->rank; i++) {
    if (read_u64(shape->items[i], &t->shape[i]) < 0)
      return set_error(msg, "tensor '%s' has a shape entry that is not a non-negative integer",
                       t->name);
    if (t->shape[i] && t->elements > UINT64_MAX / t->shape[i] / elem_size)
      return set_error(msg, "tensor '%s' has a shape too large to address", t->name);
    t->elements *= t->shape[i];
  }

  uint64_t begin, end;
  if (read_u64(offsets->items[0], &begin) < 0 || read_u64(offsets->items[1], &end) < 0 ||
      end < begin)
    return set_error(msg, "tensor '%s' has data_offsets that are not an ordered pair of integers",
                     t->name);
  t->bytes = end - begin;
  if (t->bytes != t->elements * elem_size) {
    g_autofree char *dims = pp_st_shape_string(t);
    return set_error(msg,
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
      rc = set_error(msg,
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
      rc = set_error(msg, "tensors '%s' and '%s' overlap in the data section", ranges[i - 1].name,
                     ranges[i].name);
      goto out;
    }
    if (ranges[i].begin > covered) {
      rc = set_error(msg,
                     "bytes [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                     ") of the data section belong to no tensor",
                     covered, ranges[i].begin);
      goto out;
    }
    covered = ranges[i].end;
  }
  if (covered != data_len)
    rc = set_error(msg,
                   "the data section has %" G_GUINT64_FORMAT
                   " bytes after the last tensor that belong to no tensor",
                   data_len - covered);
out:
  g_free(ranges);
  return rc;
}

static int
read_metadata(const pp_json *meta, pp_safetensors *st, char **msg)
{
  if (meta->type != PP_JSON_OBJECT)
    return set_error(msg, "\"__metadata__\" is not an object");
  if (st->meta_keys)
    return set_error(msg, "the header has two \"__metadata__\" entries");
  for (size_t i = 0; i < meta->n_items; i++)
    if (meta->items[i]->type != PP_JSON_STRING)
      return set_error(msg, "\"__metadata__\" value '%s' is not a string", meta->items[i]->key);
  st->meta_keys = g_new0(char *, meta->n_items + 1);
  st->meta_values = g_new0(char *, meta->n_items + 1);
  for (size_t i = 0; i < meta->n_items; i++) {
    st->meta_keys[i] = g_strdup(meta->items[i]->key);
    st->meta_values[i] = g_strdup(meta->items[i]->string);
  }
  st->n_meta = meta->n_items;
  return 0;
}

int
pp_safetensors_parse(const uint8_t *file, size_t len, pp_safetensors **out, char **msg)
{
  if (len < 8)
    return set_error(msg, "the file has %zu bytes, fewer than the 8 of a safetensors header length",
                     len);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; i--)
    header_len = header_len << 8 | file[i];
  if (header_len > len - 8)
    return set_error(msg,
                     "the header length %" G_GUINT64_FORMAT
                     " runs past the end of the file (%zu bytes): truncated, or not a "
                     "safetensors file",
                     header_len, len);
  if (header_len > MAX_HEADER_BYTES)
    return set_error(msg, "the header is %" G_GUINT64_FORMAT " bytes; at most %u are accepted",
                     header_len, MAX_HEADER_BYTES);

  pp_json *root = NULL;
  char *json_error = NULL;
  if (pp_json_parse((const char *) file + 8, header_len, &root, &json_error) < 0) {
    set_error(msg, "the header is not valid JSON: %s", json_error);
    g_free(json_error);
    return -EINVAL;
  }
  pp_safetensors *st = g_new0(pp_safetensors, 1);
  int rc = 0;
  if (root->type != PP_JSON_OBJECT) {
    rc = set_error(msg, "the header is not a JSON object");
    goto out;
  }
  st->tensors = g_new0(pp_st_tensor, root->n_items);
  for (size_t i = 0; i < root->n_items && rc == 0; i++) {
    const pp_json *entry = root->items[i];
    if (strcmp(entry->key, "__metadata__") == 0) {
      rc = read_metadata(entry, st, msg);
      continue;
    }
    pp_st_tensor *t = &st->tensors[st->n_tensors++];
    t->name = g_strdup(entry->key);
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
out:
  pp_json_free(root);
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

const pp_st_tensor *
pp_safetensors_find(const pp_safetensors *st, const char *name)
{
  for (size_t i = 0; i < st->n_tensors; i++)
    if (strcmp(st->tensors[i].name, name) == 0)
      return &st->tensors[i];
  return NULL;
}

static float
half_to_float(uint16_t h)
{
  const uint32_t sign = (uint32_t) (h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff, bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000 | mantissa << 13; /* inf / NaN */
  } else if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else { /* subnormal: normalise */
      exponent = 127 - 15 + 1;
      while (!(mantissa & 0x400)) {
        mantissa <<= 1;
        exponent--;
      }
      bits = sign | exponent << 23 | (mantissa & 0x3ff) << 13;
    }
  } else {
    bits = sign | (exponent + 127 - 15) << 23 | mantissa << 13;
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
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
        dst[i] = half_to_float((uint16_t) (src[2 * i] | src[2 * i + 1] << 8));
        break;
      case PP_DTYPE_BF16:
        bits = (uint32_t) (src[2 * i] | src[2 * i + 1] << 8) << 16;
        memcpy(&dst[i], &bits, sizeof bits);
        break;
      case PP_DTYPE_OTHER:
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
