/*===- CApiBatchTest.c - batched decode through the C API, every row against its own batch-1 sequence ---------===*
 *
 *   CApiBatchTest BATCHED_LIBRARY BATCH1_LIBRARY
 *
 * Compiled as C99. BATCHED_LIBRARY: a CPU step library of test/Tools/Inputs/batched-window-layer.mlir (function
 * @batched: start_pos tensor<B x i64>, x [B, 1, 64], ring [B, 8, 32]); BATCH1_LIBRARY: one of the batch-1 layer of
 * the same geometry, test/Conversion/DSAToGPU/Inputs/window-layer.mlir (@layer0). Both get the same weights (a fixed
 * pattern). Sequences are prefilled through batch-1 dsa_sequence_t's, join a dsa_batch_t with the ring and position
 * read back from them, and decode together (one join later, one leaving); every output row of every dsa_batch_step,
 * every member's ring and position, and a leaving member's ring must equal what that sequence's own batch-1
 * dsa_sequence_step gives on the same token, bit for bit (the oracle is the batch-1 runs, never the batched code).
 * Prints a line per check, then "c api batch: N passed, M failed"; exit status 0 iff every check passed.
 *
 *===----------------------------------------------------------------------------------------------------------===*/
#include "dsa-c/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIM 64
#define W 8
#define HD 32
#define MAX_SEQS 4
#define MAX_WEIGHTS 16

static int passed = 0, failed = 0;

static void check(int ok, const char *what) {
  if (!ok)
    printf("FAIL  %s\n", what);
  if (ok)
    ++passed;
  else
    ++failed;
}

static void die_on(dsa_status_t status, const char *call) {
  if (!status)
    return;
  fprintf(stderr, "CApiBatchTest: %s: %s: %s\n", call, dsa_status_code_name(dsa_status_code(status)),
          dsa_status_message(status));
  dsa_status_free(status);
  exit(2);
}

/* A deterministic pattern in [-scale, scale]: bf16 bit patterns (or f32) into `data`. */
static void fill(void *data, size_t n, dsa_dtype_t dtype, unsigned seed, float scale) {
  unsigned long z = seed * 2654435761ul + 12345ul;
  size_t i;
  for (i = 0; i < n; ++i) {
    float v;
    z = (z * 1664525ul + 1013904223ul) & 0xfffffffful;
    v = scale * ((float)(z >> 8) / 8388608.0f - 1.0f);
    if (dtype == DSA_DTYPE_BF16) {
      unsigned int u;
      unsigned short h;
      memcpy(&u, &v, 4);
      h = (unsigned short)(u >> 16);
      memcpy((char *)data + 2 * i, &h, 2);
    } else {
      memcpy((char *)data + 4 * i, &v, 4);
    }
  }
}

static dsa_buffer_t buffer(void *data, dsa_dtype_t dtype, int32_t rank, const int64_t *shape) {
  dsa_buffer_t b;
  size_t n = 1;
  int32_t d;
  for (d = 0; d < rank; ++d)
    n *= (size_t)shape[d];
  b.data = data;
  b.size_bytes = n * dsa_dtype_size(dtype);
  b.dtype = dtype;
  b.rank = rank;
  b.shape = shape;
  return b;
}

static dsa_library_t *batched_lib, *one_lib;
static size_t num_weights;
static size_t weight_args[MAX_WEIGHTS];
static dsa_buffer_t weights[MAX_WEIGHTS];
static int64_t weight_shapes[MAX_WEIGHTS][DSA_MAX_RANK];

/* Weights of @layer0 (a pattern, one per weight argument), which must be @batched's weight arguments too. */
static void make_weights(void) {
  dsa_function_info_t info;
  size_t a;
  die_on(dsa_function_info(one_lib, "layer0", &info), "dsa_function_info");
  for (a = 0; a < info.num_args; ++a) {
    dsa_value_info_t v, vb;
    size_t n = 1;
    int32_t d;
    void *data;
    die_on(dsa_function_arg(one_lib, "layer0", a, &v), "dsa_function_arg");
    if (v.role != DSA_ARG_WEIGHT)
      continue;
    die_on(dsa_function_arg(batched_lib, "batched", a, &vb), "dsa_function_arg");
    check(vb.role == DSA_ARG_WEIGHT && strcmp(vb.type, v.type) == 0, "weight arguments agree");
    for (d = 0; d < v.rank; ++d) {
      weight_shapes[num_weights][d] = v.shape[d];
      n *= (size_t)v.shape[d];
    }
    data = malloc(n * dsa_dtype_size(v.dtype) + 1);
    fill(data, n, v.dtype, (unsigned)a, v.rank == 2 ? 1.0f / (float)sqrt((double)v.shape[1]) : 0.5f);
    weights[num_weights] = buffer(data, v.dtype, v.rank, weight_shapes[num_weights]);
    weight_args[num_weights++] = a;
  }
}

/* The oracle: each sequence's own batch-1 run, and the batch's id for it (-1: not a member). */
static dsa_sequence_t *seqs[MAX_SEQS];
static dsa_batch_id_t ids[MAX_SEQS];
static int in_batch[MAX_SEQS];
static unsigned seed = 100;

static const int64_t ring_shape[2] = {W, HD};

static void read_state(dsa_sequence_t *s, unsigned short *ring) {
  dsa_buffer_t b = buffer(ring, DSA_DTYPE_BF16, 2, ring_shape);
  die_on(dsa_sequence_read_state(s, 0, &b), "dsa_sequence_read_state");
}

static dsa_sequence_t *prefilled(int64_t tokens) {
  dsa_sequence_t *s = NULL;
  unsigned short *x = malloc((size_t)tokens * DIM * 2);
  int64_t shape[2];
  dsa_buffer_t xb;
  shape[0] = tokens;
  shape[1] = DIM;
  fill(x, (size_t)tokens * DIM, DSA_DTYPE_BF16, seed++, 2.0f);
  xb = buffer(x, DSA_DTYPE_BF16, 2, shape);
  die_on(dsa_sequence_create(one_lib, "layer0", num_weights, weight_args, weights, &s), "dsa_sequence_create");
  die_on(dsa_sequence_step(s, &xb, 0, NULL, NULL), "dsa_sequence_step (prefill)");
  free(x);
  return s;
}

static void join(dsa_batch_t *batch, int k, int64_t tokens) {
  unsigned short ring[W * HD];
  dsa_buffer_t rb = buffer(ring, DSA_DTYPE_BF16, 2, ring_shape);
  int64_t position = -1;
  seqs[k] = prefilled(tokens);
  read_state(seqs[k], ring);
  die_on(dsa_sequence_position(seqs[k], &position), "dsa_sequence_position");
  check(position == tokens, "a prefill's position is its token count");
  die_on(dsa_batch_join(batch, &rb, position, &ids[k]), "dsa_batch_join");
  in_batch[k] = 1;
}

/* The sequence of member row `row`. */
static int sequence_of(const dsa_batch_t *batch, size_t row) {
  dsa_batch_id_t id;
  int k;
  die_on(dsa_batch_member(batch, row, &id), "dsa_batch_member");
  for (k = 0; k < MAX_SEQS; ++k)
    if (in_batch[k] && ids[k] == id)
      return k;
  return -1;
}

static void step_all(dsa_batch_t *batch) {
  size_t b = 0, r;
  unsigned short *x, *out, want[DIM];
  int64_t xshape[3], rowshape[2];
  dsa_buffer_t xb, ob;
  char what[128];
  die_on(dsa_batch_member_count(batch, &b), "dsa_batch_member_count");
  x = malloc(b * DIM * 2);
  out = malloc(b * DIM * 2);
  xshape[0] = (int64_t)b;
  xshape[1] = 1;
  xshape[2] = DIM;
  rowshape[0] = 1;
  rowshape[1] = DIM;
  fill(x, b * DIM, DSA_DTYPE_BF16, seed++, 2.0f);
  xb = buffer(x, DSA_DTYPE_BF16, 3, xshape);
  ob = buffer(out, DSA_DTYPE_BF16, 3, xshape);
  die_on(dsa_batch_step(batch, &xb, &ob), "dsa_batch_step");
  for (r = 0; r < b; ++r) {
    const int k = sequence_of(batch, r);
    dsa_buffer_t xr = buffer(x + r * DIM, DSA_DTYPE_BF16, 2, rowshape), wr = buffer(want, DSA_DTYPE_BF16, 2, rowshape);
    unsigned short ring[W * HD], want_ring[W * HD];
    dsa_buffer_t rb = buffer(ring, DSA_DTYPE_BF16, 2, ring_shape);
    int64_t p = -1, q = -2;
    check(k >= 0, "every member is one of the test's sequences");
    if (k < 0)
      continue;
    die_on(dsa_sequence_step(seqs[k], &xr, DSA_START_POS_NEXT, NULL, &wr), "dsa_sequence_step (oracle)");
    sprintf(what, "row %u (sequence %d): the batch-1 step's bits", (unsigned)r, k);
    check(memcmp(out + r * DIM, want, sizeof want) == 0, what);
    die_on(dsa_batch_read_ring(batch, ids[k], &rb), "dsa_batch_read_ring");
    read_state(seqs[k], want_ring);
    sprintf(what, "row %u (sequence %d): ring", (unsigned)r, k);
    check(memcmp(ring, want_ring, sizeof ring) == 0, what);
    die_on(dsa_batch_position(batch, ids[k], &p), "dsa_batch_position");
    die_on(dsa_sequence_position(seqs[k], &q), "dsa_sequence_position");
    sprintf(what, "row %u (sequence %d): position", (unsigned)r, k);
    check(p == q, what);
  }
  free(x);
  free(out);
}

static void leave(dsa_batch_t *batch, int k) {
  unsigned short ring[W * HD], want_ring[W * HD];
  dsa_buffer_t rb = buffer(ring, DSA_DTYPE_BF16, 2, ring_shape);
  int64_t position = -1, want = -2;
  die_on(dsa_batch_leave(batch, ids[k], &rb, &position), "dsa_batch_leave");
  in_batch[k] = 0;
  read_state(seqs[k], want_ring);
  die_on(dsa_sequence_position(seqs[k], &want), "dsa_sequence_position");
  check(position == want, "a leaving member's position is its batch-1 run's");
  check(memcmp(ring, want_ring, sizeof ring) == 0, "a leaving member's ring is its batch-1 run's");
}

int main(int argc, char **argv) {
  dsa_batch_t *batch = NULL;
  size_t count = 99, i;
  int k;
  if (argc != 3) {
    fprintf(stderr, "usage: CApiBatchTest BATCHED_LIBRARY BATCH1_LIBRARY\n");
    return 2;
  }
  die_on(dsa_library_open(DSA_C_API_VERSION, argv[1], &batched_lib), "dsa_library_open (batched)");
  die_on(dsa_library_open(DSA_C_API_VERSION, argv[2], &one_lib), "dsa_library_open (batch-1)");
  make_weights();
  die_on(dsa_batch_create(batched_lib, "batched", num_weights, weight_args, weights, &batch), "dsa_batch_create");
  die_on(dsa_batch_member_count(batch, &count), "dsa_batch_member_count");
  check(count == 0, "a new batch has no members");
  join(batch, 0, 3);
  join(batch, 1, 11); /* past the window: its ring has wrapped */
  step_all(batch);
  step_all(batch);
  join(batch, 2, 6); /* joins later */
  die_on(dsa_batch_member_count(batch, &count), "dsa_batch_member_count");
  check(count == 3, "three members");
  step_all(batch);
  step_all(batch);
  leave(batch, 1);
  step_all(batch);
  /* the sequence that left goes on as a batch-1 sequence; then it joins again from where it stands */
  {
    unsigned short x[DIM], ring[W * HD];
    const int64_t rowshape[2] = {1, DIM};
    dsa_buffer_t xb = buffer(x, DSA_DTYPE_BF16, 2, rowshape), rb = buffer(ring, DSA_DTYPE_BF16, 2, ring_shape);
    int64_t position = -1;
    dsa_batch_id_t old = ids[1];
    fill(x, DIM, DSA_DTYPE_BF16, seed++, 2.0f);
    die_on(dsa_sequence_step(seqs[1], &xb, DSA_START_POS_NEXT, NULL, NULL), "dsa_sequence_step");
    read_state(seqs[1], ring);
    die_on(dsa_sequence_position(seqs[1], &position), "dsa_sequence_position");
    die_on(dsa_batch_join(batch, &rb, position, &ids[1]), "dsa_batch_join (again)");
    in_batch[1] = 1;
    check(ids[1] != old, "ids are never reused");
  }
  join(batch, 3, 1);
  step_all(batch);
  step_all(batch);
  leave(batch, 0);
  leave(batch, 2);
  leave(batch, 3);
  step_all(batch); /* one member */
  leave(batch, 1);
  die_on(dsa_batch_member_count(batch, &count), "dsa_batch_member_count");
  check(count == 0, "every member left");
  dsa_batch_release(batch);
  for (k = 0; k < MAX_SEQS; ++k)
    dsa_sequence_release(seqs[k]);
  for (i = 0; i < num_weights; ++i)
    free(weights[i].data);
  dsa_library_release(batched_lib);
  dsa_library_release(one_lib);
  printf("c api batch: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
