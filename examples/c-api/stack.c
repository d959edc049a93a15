/*===- stack.c - a chunk through a stack of layers sharing slots, from C (dsa-c/runtime.h, API version 4) -------===*
 *
 * Usage: dsa-c-api-stack DIR/attention_L0.json ... DIR/attention_L5.json
 *        (every attention layer of a model in stack order, as `dsa-run --golden G --emit-libraries=DIR` writes them)
 *
 * Builds two copies of the model's attention stack (each layer's first function, every weight a deterministic
 * pseudo-random value; one shared slot set per copy when a layer takes slots), runs a 12-token prefill through every
 * layer of both, then 16 tokens at start_pos 12:
 *   copy A  one decode step per token through every layer (dsa_sequence_step), which DEFINES a chunk (section 13);
 *   copy B  the chunk layer-major: dsa_stack_plan_create cuts it into pieces, and each piece runs each layer ONCE
 *           over its rows (dsa_stack_piece_begin / _step / _finish), each layer's output the next layer's input
 *           (a model would put its norms, MoE, ... between them).
 * Prints the plan and, per layer, whether B's output rows equal A's bit for bit; then one more decode step through
 * both (it reads the slots the chunk left). Exit status 0 iff everything is identical, 1 otherwise or on an error
 * (the runtime's message printed).
 *
 *===----------------------------------------------------------------------------------------------------------===*/
#include "common.h"

enum { kPrefill = 12, kChunk = 16, kMaxLayers = 64 };

/* A pseudo-random value in [-scale, scale) from (a, i) (an integer hash; the same on every host). */
static float hashed(uint32_t a, uint32_t i, float scale) {
  uint32_t h = a * 0x9E3779B1u ^ (i + 0x7F4A7C15u) * 0x85EBCA77u;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  return scale * ((float)(h & 0xFFFFu) / 32768.0f - 1.0f);
}

static float weight_of(size_t arg, size_t i) { return hashed((uint32_t)arg + 1u, (uint32_t)i, 0.125f); }

typedef struct {
  size_t num_layers;
  dsa_sequence_t *layers[kMaxLayers];
  int takes_slots[kMaxLayers];
  dsa_slots_t *slots;
} model_t;

static void model_release(model_t *m) {
  size_t l;
  for (l = 0; l < m->num_layers; ++l)
    dsa_sequence_release(m->layers[l]);
  dsa_slots_release(m->slots);
}

/* rows x [rows, dim] at start_pos through every layer of m, one dsa_sequence_step each; out[l]: layer l's output
 * (allocated here, freed by the caller). */
static int step_layers(model_t *m, const buffer_t *x, int64_t start_pos, buffer_t *out) {
  const buffer_t *h = x;
  size_t l;
  for (l = 0; l < m->num_layers; ++l) {
    if (!buffer_alloc(&out[l], h->b.dtype, h->b.rank, h->shape))
      return 0;
    if (failed(dsa_sequence_step(m->layers[l], &h->b, start_pos, m->takes_slots[l] ? m->slots : NULL, &out[l].b)))
      return 0;
    h = &out[l];
  }
  return 1;
}

/* Rows [first, first + count) of a [rows, dim] buffer, copied. */
static int rows_of(const buffer_t *x, int64_t first, int64_t count, buffer_t *r) {
  int64_t shape[2];
  size_t row_bytes = (size_t)x->shape[1] * dsa_dtype_size(x->b.dtype);
  shape[0] = count;
  shape[1] = x->shape[1];
  if (!buffer_alloc(r, x->b.dtype, 2, shape))
    return 0;
  memcpy(r->b.data, (const char *)x->b.data + (size_t)first * row_bytes, (size_t)count * row_bytes);
  return 1;
}

int main(int argc, char **argv) {
  dsa_library_t *libraries[kMaxLayers] = {0};
  model_t a, b;
  dsa_stack_plan_t *plan = NULL;
  dsa_value_info_t x_info;
  buffer_t x, outs[kMaxLayers], got[kMaxLayers], want[kMaxLayers];
  size_t num_layers = (size_t)(argc - 1), l, p, pieces = 0, i;
  int64_t t, shape[2];
  int status = 1, identical = 1;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  memset(&x, 0, sizeof x);
  memset(outs, 0, sizeof outs);
  memset(got, 0, sizeof got);
  memset(want, 0, sizeof want);

  if (argc < 2 || num_layers > kMaxLayers) {
    fprintf(stderr, "usage: %s STEP_LIBRARY.json... (every attention layer of a model, in stack order)\n", argv[0]);
    return 2;
  }
  for (l = 0; l < num_layers; ++l) {
    const char *function;
    dsa_function_info_t info;
    model_t *m;
    if (failed(dsa_library_open(DSA_C_API_VERSION, argv[l + 1], &libraries[l])) ||
        failed(dsa_library_function_name(libraries[l], 0, &function)) ||
        failed(dsa_function_info(libraries[l], function, &info)))
      goto done;
    if (info.x_arg < 0) {
      fprintf(stderr, "error: %s: @%s has no step roles (not a dsa.attention layer)\n", argv[l + 1], function);
      goto done;
    }
    if (l == 0 && failed(dsa_function_arg(libraries[0], function, (size_t)info.x_arg, &x_info)))
      goto done;
    for (m = &a; m; m = m == &a ? &b : NULL) {
      if (!(m->layers[l] = create_sequence(libraries[l], function, weight_of)))
        goto done;
      m->num_layers = l + 1;
      m->takes_slots[l] = info.num_shared > 0;
      if (info.num_shared > 0 && !m->slots && failed(dsa_slots_create(libraries[l], function, &m->slots)))
        goto done;
    }
    printf("layer %zu: @%s, %zu shared slots, chunks %s\n", l, function, info.num_shared,
           info.chunked ? "in one call" : (info.num_shared ? "through a stack plan" : "split"));
  }

  /* The tokens: kPrefill + kChunk + 1 rows of the first layer's x. */
  shape[0] = kPrefill + kChunk + 1;
  shape[1] = x_info.shape[1];
  if (!buffer_alloc(&x, x_info.dtype, 2, shape))
    goto done;
  for (i = 0; i < count_of(shape, 2); ++i)
    store(x.b.data, x_info.dtype, i, hashed(1000u, (uint32_t)i, 1.0f));

  /* The prefill through both copies. */
  for (p = 0; p < 2; ++p) {
    buffer_t prefill;
    int ok = rows_of(&x, 0, kPrefill, &prefill) && step_layers(p ? &b : &a, &prefill, 0, outs);
    buffer_free(&prefill);
    for (l = 0; l < num_layers; ++l)
      buffer_free(&outs[l]);
    if (!ok)
      goto done;
  }
  printf("prefill of %d tokens through every layer of both copies\n", kPrefill);

  /* A: the chunk's tokens one decode step at a time; want[l] collects layer l's output rows. */
  for (l = 0; l < num_layers; ++l) {
    shape[0] = kChunk;
    if (!buffer_alloc(&want[l], x_info.dtype, 2, shape) || !buffer_alloc(&got[l], x_info.dtype, 2, shape))
      goto done;
  }
  for (t = 0; t < kChunk; ++t) {
    buffer_t token;
    size_t row_bytes = (size_t)shape[1] * dsa_dtype_size(x_info.dtype);
    int ok = rows_of(&x, kPrefill + t, 1, &token) && step_layers(&a, &token, kPrefill + t, outs);
    for (l = 0; ok && l < num_layers; ++l)
      memcpy((char *)want[l].b.data + (size_t)t * row_bytes, outs[l].b.data, row_bytes);
    buffer_free(&token);
    for (l = 0; l < num_layers; ++l)
      buffer_free(&outs[l]);
    if (!ok)
      goto done;
  }

  /* B: the chunk layer-major, piece by piece. */
  if (failed(dsa_stack_plan_create(b.layers, num_layers, kPrefill, kPrefill, kChunk, &plan)) ||
      failed(dsa_stack_plan_piece_count(plan, &pieces)))
    goto done;
  printf("chunk of %d tokens at start_pos %d: a plan of %zu piece(s)", kChunk, kPrefill, pieces);
  for (p = 0; p < pieces; ++p) {
    int64_t first, count;
    buffer_t h;
    if (failed(dsa_stack_plan_piece(plan, p, &first, &count)))
      goto done;
    printf("%s [%lld, %lld)", p ? "," : ":", (long long)first, (long long)(first + count));
    if (failed(dsa_stack_piece_begin(plan, p, b.slots)) || !rows_of(&x, kPrefill + first, count, &h))
      goto done;
    for (l = 0; l < num_layers; ++l) {
      buffer_t out;
      size_t row_bytes = (size_t)shape[1] * dsa_dtype_size(x_info.dtype);
      int ok = buffer_alloc(&out, h.b.dtype, 2, h.shape) &&
               !failed(dsa_stack_piece_step(plan, p, l, &h.b, b.slots, &out.b));
      if (ok)
        memcpy((char *)got[l].b.data + (size_t)first * row_bytes, out.b.data, (size_t)count * row_bytes);
      buffer_free(&h);
      h = out; /* layer l's output is layer l + 1's input (the model's own computation would go between) */
      if (!ok) {
        buffer_free(&h);
        goto done;
      }
    }
    buffer_free(&h);
    if (failed(dsa_stack_piece_finish(plan, p, b.slots)))
      goto done;
  }
  printf("\n");
  for (l = 0; l < num_layers; ++l) {
    int same = memcmp(got[l].b.data, want[l].b.data, got[l].b.size_bytes) == 0;
    identical = identical && same;
    printf("  layer %zu: %d output rows %s token-by-token decode\n", l, kChunk, same ? "identical to" : "DIFFER from");
  }

  /* One decode step after the chunk through both copies: it reads the slots the chunk left. */
  {
    buffer_t token, outs_b[kMaxLayers];
    int ok, same = 1;
    memset(outs_b, 0, sizeof outs_b);
    ok = rows_of(&x, kPrefill + kChunk, 1, &token) && step_layers(&a, &token, kPrefill + kChunk, outs) &&
         step_layers(&b, &token, kPrefill + kChunk, outs_b);
    for (l = 0; ok && l < num_layers; ++l)
      same = same && memcmp(outs[l].b.data, outs_b[l].b.data, outs[l].b.size_bytes) == 0;
    buffer_free(&token);
    for (l = 0; l < num_layers; ++l) {
      buffer_free(&outs[l]);
      buffer_free(&outs_b[l]);
    }
    if (!ok)
      goto done;
    identical = identical && same;
    printf("decode at start_pos %d after the chunk: %s\n", kPrefill + kChunk,
           same ? "identical in both copies" : "DIFFERS");
  }
  printf("chunk through the stack: %s\n", identical ? "identical to token-by-token decode" : "MISMATCH");
  status = identical ? 0 : 1;
done:
  dsa_stack_plan_release(plan);
  buffer_free(&x);
  for (l = 0; l < num_layers; ++l) {
    buffer_free(&got[l]);
    buffer_free(&want[l]);
  }
  model_release(&a);
  model_release(&b);
  for (l = 0; l < num_layers; ++l)
    dsa_library_release(libraries[l]);
  return status;
}
