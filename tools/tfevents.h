/* A minimal TensorBoard event-file writer: scalar summaries only, with no
 * protobuf library. Events are encoded by hand (the few fields of
 * tensorflow.Event and Summary that scalars need) and framed as TFRecords
 * with masked CRC-32C checksums, so TensorBoard reads the files as its own.
 * Plain C11 and the C library; no mixp dependency. */
#ifndef MIXP_TFEVENTS_H
#define MIXP_TFEVENTS_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), continuing from
 * `crc` (0 for a new checksum). */
uint32_t tfevents_crc32c(uint32_t crc, const void *data, size_t n);

/* TFRecord's masked form of a CRC: rotated right by 15, plus 0xa282ead8. */
uint32_t tfevents_mask_crc(uint32_t crc);

/* Writes one TFRecord (length, masked CRC of the length, data, masked CRC of
 * the data) into `out`, which must hold tfevents_record_size(n) bytes;
 * returns the bytes written. */
size_t tfevents_record_size(size_t n);
size_t tfevents_frame_record(const void *data, size_t n, unsigned char *out);

/* Encodes an Event {wall_time, step, summary {value {tag, simple_value}}}
 * into `out` (capacity `cap`); returns its length, or 0 if it does not fit.
 * Zero wall_time and step are omitted, as protobuf's own serialiser does. */
size_t tfevents_encode_scalar(double wall_time, int64_t step, const char *tag, float value,
                              unsigned char *out, size_t cap);

/* Encodes the first event of every file, Event {wall_time, file_version =
 * "brain.Event:2"}, as tfevents_encode_scalar() does. */
size_t tfevents_encode_file_version(double wall_time, unsigned char *out, size_t cap);

typedef struct tfevents_writer tfevents_writer;

/* Creates `dir` (and its parents) if needed and opens a new file
 * dir/events.out.tfevents.<unix time>.<hostname> starting with the
 * file_version event "brain.Event:2". Returns NULL with errno set (and
 * `path_out`, when not NULL, naming what failed or the file opened:
 * capacity `path_cap`). */
tfevents_writer *tfevents_open(const char *dir, char *path_out, size_t path_cap);

/* Appends one scalar event; returns 0, or -1 with errno set. */
int tfevents_add_scalar(tfevents_writer *w, const char *tag, int64_t step, float value);

/* Hands buffered events to the operating system; returns 0 or -1. */
int tfevents_flush(tfevents_writer *w);

/* Flushes and closes; returns 0, or -1 if a write failed at any point.
 * NULL is a no-op returning 0. */
int tfevents_close(tfevents_writer *w);

/* Creates a directory and its parents (mkdir -p); returns 0 or -1. */
int tfevents_mkdirs(const char *dir);

#endif /* MIXP_TFEVENTS_H */
