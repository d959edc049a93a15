/*===- common.h - helpers of the C API examples (main.c, stack.c) ----------------------------------------------===*
 *
 * Error printing, buffers of a signature's dtype and shape, and a sequence created with every weight filled by a
 * caller's rule (a real caller passes its checkpoint's weights). Static functions: each example includes it once.
 *
 *===----------------------------------------------------------------------------------------------------------===*/
#ifndef DSA_C_API_EXAMPLE_COMMON_H
#define DSA_C_API_EXAMPLE_COMMON_H

#include "dsa-c/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints a failed call's status and frees it; returns 1 if there was one. */
static int failed(dsa_status_t status) {
  if (!status)
    return 0;
  fprintf(stderr, "error (%s): %s\n", dsa_status_code_name(dsa_status_code(status)), dsa_status_message(status));
  dsa_status_free(status);
  return 1;
}

static size_t count_of(const int64_t *shape, int32_t rank) {
  size_t n = 1;
  int32_t d;
  for (d = 0; d < rank; ++d)
    n *= (size_t)shape[d];
  return n;
}

/* Stores v as element i of a dtype buffer (bf16: the upper half of the f32, truncated; other dtypes: 0). */
static void store(void *data, dsa_dtype_t dtype, size_t i, float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  if (dtype == DSA_DTYPE_BF16) {
    uint16_t h = (uint16_t)(u >> 16);
    memcpy((char *)data + 2 * i, &h, 2);
  } else if (dtype == DSA_DTYPE_F32) {
    memcpy((char *)data + 4 * i, &v, 4);
  } else {
    memset((char *)data + dsa_dtype_size(dtype) * i, 0, dsa_dtype_size(dtype));
  }
}

/* A tensor of `dtype` and `shape[0..rank)`, owned (free with buffer_free). */
typedef struct {
  dsa_buffer_t b;
  int64_t shape[DSA_MAX_RANK];
} buffer_t;

static int buffer_alloc(buffer_t *buf, dsa_dtype_t dtype, int32_t rank, const int64_t *shape) {
  size_t bytes;
  memset(buf, 0, sizeof *buf);
  memcpy(buf->shape, shape, sizeof(int64_t) * (size_t)rank);
  bytes = count_of(shape, rank) * dsa_dtype_size(dtype);
  buf->b.data = malloc(bytes + 1);
  buf->b.size_bytes = bytes;
  buf->b.dtype = dtype;
  buf->b.rank = rank;
  buf->b.shape = buf->shape;
  return buf->b.data != NULL;
}

static void buffer_free(buffer_t *buf) {
  free(buf->b.data);
  buf->b.data = NULL;
}

/* A sequence of `function` with weight element i of weight argument a set to weight(a, i). NULL (message printed) on
 * an error. */
static dsa_sequence_t *create_sequence(dsa_library_t *library, const char *function,
                                       float (*weight)(size_t arg, size_t i)) {
  dsa_function_info_t info;
  dsa_sequence_t *sequence = NULL;
  size_t a, i, k, num_weights = 0;
  size_t *weight_args;
  buffer_t *buffers;
  dsa_buffer_t *weights;
  if (failed(dsa_function_info(library, function, &info)))
    return NULL;
  weight_args = (size_t *)calloc(info.num_args, sizeof(size_t));
  buffers = (buffer_t *)calloc(info.num_args, sizeof(buffer_t));
  weights = (dsa_buffer_t *)calloc(info.num_args, sizeof(dsa_buffer_t));
  for (a = 0; a < info.num_args; ++a) {
    dsa_value_info_t v;
    size_t n;
    if (failed(dsa_function_arg(library, function, a, &v)))
      goto done;
    if (v.role != DSA_ARG_WEIGHT)
      continue;
    if (!buffer_alloc(&buffers[num_weights], v.dtype, v.rank, v.shape))
      goto done;
    n = count_of(v.shape, v.rank);
    for (i = 0; i < n; ++i)
      store(buffers[num_weights].b.data, v.dtype, i, weight(a, i));
    weights[num_weights] = buffers[num_weights].b;
    weight_args[num_weights++] = a;
  }
  if (failed(dsa_sequence_create(library, function, num_weights, weight_args, weights, &sequence)))
    sequence = NULL;
done:
  for (k = 0; k < num_weights; ++k) /* copied by the sequence */
    buffer_free(&buffers[k]);
  free(buffers);
  free(weights);
  free(weight_args);
  return sequence;
}

#endif /* DSA_C_API_EXAMPLE_COMMON_H */
