/*
 * asb-step-runner: runs a session's steps and file operations inside a sandbox, driven by the
 * control plane over one reliable byte stream (a virtio-serial port in a microVM; a pipe pair in
 * the tests). The protocol is length-prefixed frames, each with a type and a channel id; it is
 * documented in docs/step-runner.md, which is the contract the Java client
 * (dev.agentsandbox.steprunner) and this program both follow.
 *
 * Static, dependency-free C (glibc only): nothing to install in the guest, nothing a step can
 * swap under it.
 */
#ifndef ASB_RUNNER_H
#define ASB_RUNNER_H

#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/types.h>

#define PROTOCOL_VERSION 2
#define HEADER_BYTES 9
#define MAX_PAYLOAD 65536
#define MAX_STEPS 8
#define MAX_TRANSFERS 8
#define MAX_SEGMENTS 2048
#define MAX_SEGMENT_BYTES 255
#define MAX_STDIN_BUFFER (4u << 20)
#define MAX_LIST 100000
#define MAX_DEPTH 128
#define CHUNK 32768

/* Host to runner. */
enum {
  T_EXEC = 0x01,
  T_STDIN = 0x02,
  T_STDIN_END = 0x03,
  T_KILL = 0x04,
  T_STAT = 0x10,
  T_LIST = 0x11,
  T_READ = 0x12,
  T_WALK = 0x13,
  T_MKDIR = 0x14,
  T_PUT = 0x15,
  T_PUT_DATA = 0x16,
  T_PUT_END = 0x17,
  T_CREDIT = 0x18,
  T_CANCEL = 0x19,
  T_BYE = 0x3f
};

/* Runner to host. */
enum {
  R_HELLO = 0x40,
  R_STARTED = 0x41,
  R_STDOUT = 0x42,
  R_STDERR = 0x43,
  R_EXITED = 0x44,
  R_END = 0x50,
  R_REFUSED = 0x51,
  R_INFO = 0x52,
  R_DATA = 0x53,
  R_SIZE = 0x54,
  R_SKIPPED = 0x55,
  R_FATAL = 0x7f
};

/* Why an operation was refused (the REFUSED frame's first field). */
enum {
  RS_NOT_FOUND = 1,
  RS_SYMLINK = 2,
  RS_NOT_REGULAR = 3,
  RS_WRONG_KIND = 4,
  RS_TOO_LARGE = 5,
  RS_PERMISSION = 6,
  RS_FAILED = 7,
  RS_BUSY = 8
};

/* What is at a path (the INFO frame's kind). */
enum { K_FILE = 1, K_FOLDER = 2, K_SYMLINK = 3, K_OTHER = 4 };

/* A frame being built: the header is filled in by send_frame. */
struct frame {
  size_t len;
  uint8_t bytes[HEADER_BYTES + MAX_PAYLOAD];
};

/* A payload being read; any read past its end sets bad and yields zeros. */
struct reader {
  const uint8_t *p;
  size_t len;
  size_t pos;
  int bad;
};

/* A path below the workspace, as segments (each checked: no '/', NUL, "." or ".."). */
struct path {
  int count;
  char **segments;
};

/* Why a path could not be resolved: a reason and the errno behind it. */
struct refusal {
  int reason;
  int error;
  int segment;
};

/* runner.c */
extern int workspace_fd;
extern int use_openat2;
void frame_start(struct frame *f);
void put_u32(struct frame *f, uint32_t v);
void put_u64(struct frame *f, uint64_t v);
void put_bytes(struct frame *f, const void *data, size_t len);
void put_str(struct frame *f, const char *s);
void send_frame(struct frame *f, uint8_t type, uint32_t id);
void send_simple(uint8_t type, uint32_t id, const void *data, size_t len);
void send_refused(uint32_t id, const struct refusal *why, const char *what);
void send_end_u64(uint32_t id, uint64_t value);
uint32_t get_u32(struct reader *r);
uint64_t get_u64(struct reader *r);
char *get_str(struct reader *r);
int get_path(struct reader *r, struct path *out);
void free_path(struct path *p);
void fatal(const char *message);
void drain_signals(int signal_fd);

/* listen.c */
int listen_spec_ok(const char *spec);
int listen_once(const char *spec, int signal_fd);

/* paths.c */
int open_folder(const struct path *p, int count, int create, struct refusal *why, int *created);
int kind_of(mode_t mode);
int reason_of(int dirfd, const char *name, int error);
int open_dir_nofollow(int dirfd, const char *name);
void put_info(struct frame *f, const char *name, const struct stat *st);
void op_stat(uint32_t id, struct reader *r);
void op_list(uint32_t id, struct reader *r);
void op_mkdir(uint32_t id, struct reader *r);
void op_put(uint32_t id, struct reader *r);
void op_put_data(uint32_t id, struct reader *r);
void op_put_end(uint32_t id, struct reader *r);

/* transfer.c */
void op_transfer(uint32_t id, int walk, struct reader *r);
void op_credit(uint32_t id, struct reader *r);
void op_cancel(uint32_t id);

/* steps.c */
extern int cgroup_fd;
void steps_init(char **base_env);
void op_exec(uint32_t id, struct reader *r);
void op_stdin(uint32_t id, struct reader *r, int end);
void op_kill(uint32_t id);
int steps_poll_fds(struct pollfd *fds, int max, int *deadline_ms);
void steps_after_poll(struct pollfd *fds, int count);
void steps_reap(void);
void steps_kill_all(void);

#endif
