/* The TensorBoard event writer of tools/tfevents.c against known answers:
 * CRC-32C test vectors (RFC 3720 B.4 and the "123456789" check value), and
 * events and records byte for byte as TensorBoard's own protobuf classes
 * and record writer produce them (tensorboard 2.21, generated once with
 * tensorboard.compat.proto.event_pb2 and
 * tensorboard.compat.tensorflow_stub.pywrap_tensorflow.masked_crc32c). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tfevents.h"

static void test_crc32c_vectors(void **state) {
  (void)state;
  unsigned char buf[32];
  assert_int_equal(tfevents_crc32c(0, "123456789", 9), 0xE3069283u);
  assert_int_equal(tfevents_crc32c(0, "", 0), 0u);
  memset(buf, 0, sizeof buf);
  assert_int_equal(tfevents_crc32c(0, buf, 32), 0x8A9136AAu);
  memset(buf, 0xFF, sizeof buf);
  assert_int_equal(tfevents_crc32c(0, buf, 32), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) buf[i] = (unsigned char)i;
  assert_int_equal(tfevents_crc32c(0, buf, 32), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) buf[i] = (unsigned char)(31 - i);
  assert_int_equal(tfevents_crc32c(0, buf, 32), 0x113FDB5Cu);
}

/* A checksum continued over pieces equals the checksum of the whole. */
static void test_crc32c_incremental(void **state) {
  (void)state;
  const char *s = "The quick brown fox jumps over the lazy dog";
  size_t n = strlen(s);
  uint32_t whole = tfevents_crc32c(0, s, n);
  assert_int_equal(whole, 0x22620404u);
  for (size_t cut = 0; cut <= n; ++cut)
    assert_int_equal(tfevents_crc32c(tfevents_crc32c(0, s, cut), s + cut, n - cut), whole);
}

static void test_masked_crc(void **state) {
  (void)state;
  assert_int_equal(tfevents_mask_crc(tfevents_crc32c(0, "", 0)), 0xa282ead8u);
  assert_int_equal(tfevents_mask_crc(tfevents_crc32c(0, "123456789", 9)), 0xc78ab0e5u);
}

static size_t from_hex(const char *hex, unsigned char *out) {
  size_t n = strlen(hex) / 2;
  for (size_t i = 0; i < n; ++i) {
    unsigned v = 0;
    sscanf(hex + 2 * i, "%2x", &v);
    out[i] = (unsigned char)v;
  }
  return n;
}

static void assert_bytes(const unsigned char *got, size_t n_got, const char *hex) {
  unsigned char want[256];
  size_t n = from_hex(hex, want);
  assert_int_equal(n_got, n);
  assert_memory_equal(got, want, n);
}

/* Event{wall_time 1.5, step 7, summary{value{tag "train/loss", simple_value 0.25}}}
 * as protobuf serialises it; a zero step is left out, a zero simple_value
 * (a oneof member) is not; a negative step is a ten-byte varint. */
static void test_scalar_event_bytes(void **state) {
  (void)state;
  unsigned char ev[256];
  size_t n = tfevents_encode_scalar(1.5, 7, "train/loss", 0.25f, ev, sizeof ev);
  assert_bytes(ev, n, "09000000000000f83f10072a130a110a0a747261696e2f6c6f7373150000803e");
  n = tfevents_encode_scalar(1.5, 0, "a", 0.0f, ev, sizeof ev);
  assert_bytes(ev, n, "09000000000000f83f2a0a0a080a01611500000000");
  n = tfevents_encode_scalar(1.5, -1, "a", -2.0f, ev, sizeof ev);
  assert_bytes(ev, n, "09000000000000f83f10ffffffffffffffffff012a0a0a080a016115000000c0");
  n = tfevents_encode_file_version(1.5, ev, sizeof ev);
  assert_bytes(ev, n, "09000000000000f83f1a0d627261696e2e4576656e743a32");
  /* Too small a buffer: 0, not a truncated event. */
  assert_int_equal(tfevents_encode_scalar(1.5, 7, "train/loss", 0.25f, ev, 20), 0);
}

static void test_record_framing(void **state) {
  (void)state;
  unsigned char ev[256], rec[300];
  size_t n = tfevents_encode_scalar(1.5, 7, "train/loss", 0.25f, ev, sizeof ev);
  assert_int_equal(tfevents_record_size(n), n + 16);
  size_t len = tfevents_frame_record(ev, n, rec);
  assert_bytes(rec, len,
               "200000000000000029eda95009000000000000f83f10072a130a110a0a747261696e2f6c6f7373"
               "150000803ef4985d1a");
}

/* A writer's file starts with the file_version record; scalars follow;
 * the directory is created with its parents. */
static void test_writer_file(void **state) {
  (void)state;
  char dir[] = "/tmp/mixp-tfevents-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char sub[256], path[4096];
  snprintf(sub, sizeof sub, "%s/a/b", dir);
  tfevents_writer *w = tfevents_open(sub, path, sizeof path);
  assert_non_null(w);
  assert_non_null(strstr(path, "/a/b/events.out.tfevents."));
  assert_int_equal(tfevents_add_scalar(w, "x", 3, 1.0f), 0);
  assert_int_equal(tfevents_close(w), 0);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  unsigned char data[512];
  size_t got = fread(data, 1, sizeof data, f);
  fclose(f);
  unsigned char fv[64], sc[64];
  size_t nfv = tfevents_encode_file_version(1.0, fv, sizeof fv);
  size_t nsc = tfevents_encode_scalar(1.0, 3, "x", 1.0f, sc, sizeof sc);
  assert_int_equal(got, tfevents_record_size(nfv) + tfevents_record_size(nsc));
  /* Same layout as the reference encodings except for the wall time
   * (bytes 1..8 of each event, after the 12-byte record header). */
  assert_memory_equal(data + 12 + 9, fv + 9, nfv - 9);
  size_t second = tfevents_record_size(nfv);
  assert_memory_equal(data + second + 12 + 9, sc + 9, nsc - 9);
  /* A second writer in the same second and directory gets its own file. */
  char path2[4096];
  tfevents_writer *w2 = tfevents_open(sub, path2, sizeof path2);
  assert_non_null(w2);
  assert_string_not_equal(path, path2);
  assert_int_equal(tfevents_close(w2), 0);
  remove(path);
  remove(path2);
  /* A file where the directory should be: NULL, and the name is reported. */
  char blocker[4096];
  snprintf(blocker, sizeof blocker, "%s/a/b/file", dir);
  f = fopen(blocker, "w");
  assert_non_null(f);
  fclose(f);
  assert_null(tfevents_open(blocker, path, sizeof path));
  assert_string_equal(path, blocker);
  remove(blocker);
  snprintf(sub, sizeof sub, "%s/a/b", dir);
  remove(sub);
  snprintf(sub, sizeof sub, "%s/a", dir);
  remove(sub);
  remove(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crc32c_vectors),   cmocka_unit_test(test_crc32c_incremental),
      cmocka_unit_test(test_masked_crc),       cmocka_unit_test(test_scalar_event_bytes),
      cmocka_unit_test(test_record_framing),   cmocka_unit_test(test_writer_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
