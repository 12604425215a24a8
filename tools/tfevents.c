/* TensorBoard event files without protobuf: see tfevents.h. The wire format
 * is protobuf's (tag = field << 3 | wire type; varints little-endian base
 * 128; doubles and floats little-endian fixed width), for these fields of
 * tensorboard/compat/proto/event.proto and summary.proto:
 *
 *   Event   { double wall_time = 1; int64 step = 2;
 *             oneof what { string file_version = 3; Summary summary = 5; } }
 *   Summary { repeated Value value = 1; }
 *   Value   { string tag = 1; oneof value { float simple_value = 2; } }
 *
 * Members of a oneof are always written, even when zero: a simple_value of
 * 0.0 left out would leave the value unset and TensorBoard would drop it. */
#define _POSIX_C_SOURCE 200809L
#include "tfevents.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- CRC-32C ------------------------------------------------------------- */

static uint32_t crc_table[256];
static int crc_ready;

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    crc_table[i] = c;
  }
  crc_ready = 1;
}

uint32_t tfevents_crc32c(uint32_t crc, const void *data, size_t n) {
  if (!crc_ready) crc_init();
  const unsigned char *p = data;
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = crc_table[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

uint32_t tfevents_mask_crc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

/* ---- little-endian and protobuf encoding ----------------------------------- */

static void put_le(unsigned char *out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = (unsigned char)(v >> (8 * i));
}

typedef struct buf {
  unsigned char *p;
  size_t len, cap;
  int overflow;
} buf;

static void put_bytes(buf *b, const void *data, size_t n) {
  if (b->overflow || n > b->cap - b->len) {
    b->overflow = 1;
    return;
  }
  memcpy(b->p + b->len, data, n);
  b->len += n;
}

static size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, ++n;
  return n;
}

static void put_varint(buf *b, uint64_t v) {
  unsigned char tmp[10];
  size_t n = 0;
  while (v >= 0x80) tmp[n++] = (unsigned char)(v | 0x80), v >>= 7;
  tmp[n++] = (unsigned char)v;
  put_bytes(b, tmp, n);
}

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2, WIRE_FIXED32 = 5 };

static void put_key(buf *b, unsigned field, unsigned wire) { put_varint(b, (uint64_t)(field << 3 | wire)); }

static void put_double(buf *b, unsigned field, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  unsigned char le[8];
  put_le(le, bits, 8);
  put_key(b, field, WIRE_FIXED64);
  put_bytes(b, le, 8);
}

static void put_float(buf *b, unsigned field, float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  unsigned char le[4];
  put_le(le, bits, 4);
  put_key(b, field, WIRE_FIXED32);
  put_bytes(b, le, 4);
}

static void put_string(buf *b, unsigned field, const char *s, size_t n) {
  put_key(b, field, WIRE_LEN);
  put_varint(b, n);
  put_bytes(b, s, n);
}

/* Event fields 1 and 2, common to every event. */
static void put_event_header(buf *b, double wall_time, int64_t step) {
  if (wall_time != 0.0) put_double(b, 1, wall_time);
  if (step != 0) {
    put_key(b, 2, WIRE_VARINT);
    put_varint(b, (uint64_t)step); /* int64: negative steps take ten bytes */
  }
}

size_t tfevents_encode_scalar(double wall_time, int64_t step, const char *tag, float value,
                              unsigned char *out, size_t cap) {
  buf b = {out, 0, cap, 0};
  const size_t tag_len = strlen(tag);
  /* Value {tag, simple_value}; Summary {value}; Event {..., summary}. */
  const size_t value_len = 1 + varint_size(tag_len) + tag_len + 1 + 4;
  const size_t summary_len = 1 + varint_size(value_len) + value_len;
  put_event_header(&b, wall_time, step);
  put_key(&b, 5, WIRE_LEN);
  put_varint(&b, summary_len);
  put_key(&b, 1, WIRE_LEN);
  put_varint(&b, value_len);
  put_string(&b, 1, tag, tag_len);
  put_float(&b, 2, value);
  return b.overflow ? 0 : b.len;
}

size_t tfevents_encode_file_version(double wall_time, unsigned char *out, size_t cap) {
  static const char version[] = "brain.Event:2";
  buf b = {out, 0, cap, 0};
  put_event_header(&b, wall_time, 0);
  put_string(&b, 3, version, sizeof version - 1);
  return b.overflow ? 0 : b.len;
}

/* ---- TFRecord framing -------------------------------------------------------- */

size_t tfevents_record_size(size_t n) { return 8 + 4 + n + 4; }

size_t tfevents_frame_record(const void *data, size_t n, unsigned char *out) {
  put_le(out, (uint64_t)n, 8);
  put_le(out + 8, tfevents_mask_crc(tfevents_crc32c(0, out, 8)), 4);
  memcpy(out + 12, data, n);
  put_le(out + 12 + n, tfevents_mask_crc(tfevents_crc32c(0, data, n)), 4);
  return tfevents_record_size(n);
}

/* ---- the writer ---------------------------------------------------------------- */

struct tfevents_writer {
  FILE *f;
  int failed; /* a write failed: reported by flush and close */
};

static double wall_time_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Tags are short: an event is at most ~40 bytes plus the tag. */
#define MAX_EVENT 1024

static int write_event(tfevents_writer *w, const unsigned char *event, size_t n) {
  unsigned char rec[MAX_EVENT + 16];
  size_t len = tfevents_frame_record(event, n, rec);
  if (fwrite(rec, 1, len, w->f) != len) {
    w->failed = 1;
    return -1;
  }
  return 0;
}

int tfevents_mkdirs(const char *dir) {
  char path[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof path) {
    errno = n == 0 ? ENOENT : ENAMETOOLONG;
    return -1;
  }
  memcpy(path, dir, n + 1);
  for (size_t i = 1; i <= n; ++i) {
    if (path[i] != '/' && path[i] != '\0') continue;
    char saved = path[i];
    path[i] = '\0';
    if (mkdir(path, 0777) != 0 && errno != EEXIST) return -1;
    path[i] = saved;
  }
  struct stat st;
  if (stat(dir, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

tfevents_writer *tfevents_open(const char *dir, char *path_out, size_t path_cap) {
  char path[4096];
  if (path_out && path_cap) snprintf(path_out, path_cap, "%s", dir);
  if (tfevents_mkdirs(dir) != 0) return NULL;
  char host[256] = "localhost";
  if (gethostname(host, sizeof host - 1) != 0) strcpy(host, "localhost");
  host[sizeof host - 1] = '\0';
  const double now = wall_time_now();
  /* Two writers started in the same second in one directory must not share
   * a file: "x" refuses an existing name, so the second gets a suffix. */
  FILE *f = NULL;
  for (int k = 0; k < 100 && !f; ++k) {
    int len = k == 0 ? snprintf(path, sizeof path, "%s/events.out.tfevents.%lld.%s", dir,
                                (long long)now, host)
                     : snprintf(path, sizeof path, "%s/events.out.tfevents.%lld.%s.%d", dir,
                                (long long)now, host, k);
    if (len < 0 || (size_t)len >= sizeof path) {
      errno = ENAMETOOLONG;
      return NULL;
    }
    f = fopen(path, "wbx");
    if (!f && errno != EEXIST) break;
  }
  if (path_out && path_cap) snprintf(path_out, path_cap, "%s", path);
  if (!f) return NULL;
  tfevents_writer *w = calloc(1, sizeof *w);
  if (!w) {
    fclose(f);
    errno = ENOMEM;
    return NULL;
  }
  w->f = f;
  unsigned char event[MAX_EVENT];
  size_t n = tfevents_encode_file_version(now, event, sizeof event);
  if (write_event(w, event, n) != 0 || tfevents_flush(w) != 0) {
    int err = errno;
    fclose(f);
    free(w);
    errno = err;
    return NULL;
  }
  return w;
}

int tfevents_add_scalar(tfevents_writer *w, const char *tag, int64_t step, float value) {
  unsigned char event[MAX_EVENT];
  size_t n = tfevents_encode_scalar(wall_time_now(), step, tag, value, event, sizeof event);
  if (n == 0) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return write_event(w, event, n);
}

int tfevents_flush(tfevents_writer *w) {
  if (fflush(w->f) != 0) w->failed = 1;
  return w->failed ? -1 : 0;
}

int tfevents_close(tfevents_writer *w) {
  if (!w) return 0;
  int rc = tfevents_flush(w);
  if (fclose(w->f) != 0) rc = -1;
  free(w);
  return rc;
}
