/* A small strict JSON reader, enough for a safetensors header: objects,
 * arrays, strings, integers, and the other literals so that any valid header
 * parses. Errors name the byte offset. */
#ifndef PP_JSON_H
#define PP_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  PP_JSON_NULL,
  PP_JSON_BOOL,
  PP_JSON_NUMBER,
  PP_JSON_STRING,
  PP_JSON_ARRAY,
  PP_JSON_OBJECT,
} pp_json_type;

typedef struct pp_json pp_json;
struct pp_json {
  pp_json_type type;
  char *key;       /* member name when inside an object */
  char *string;    /* PP_JSON_STRING */
  double number;   /* PP_JSON_NUMBER */
  int is_integer;  /* the number was written without fraction or exponent */
  int64_t integer; /* its value, when is_integer */
  int boolean;     /* PP_JSON_BOOL */
  pp_json **items; /* array elements or object members, in file order */
  size_t n_items;
};

/* Parses text[0..len). On error returns -EINVAL and a message in *msg. */
int pp_json_parse(const char *text, size_t len, pp_json **out, char **msg);
void pp_json_free(pp_json *node);

/* Member of an object by name, or NULL. */
const pp_json *pp_json_member(const pp_json *object, const char *key);

#endif
