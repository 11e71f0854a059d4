/*
 * The runner's main thread: options, dropping to the workload's user, the frame codec, and the
 * loop that reads the host's frames and the steps' pipes. See runner.h and docs/step-runner.md.
 */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

int workspace_fd = -1;
int use_openat2 = 1;
static int in_fd = 0;
static int out_fd = 1;
static pthread_mutex_t send_lock = PTHREAD_MUTEX_INITIALIZER;

static void usage(void) {
  fprintf(stderr,
          "usage: asb-step-runner --workspace DIR [--in FD] [--out FD | --listen 127.0.0.1:PORT]"
          " [--chroot DIR] [--uid N --gid N] [--cgroup-fd FD] [--no-openat2]\n");
  exit(64);
}

void fatal(const char *message) {
  /* Tell the host why, once, then stop everything this runner started. */
  struct frame f;
  frame_start(&f);
  put_str(&f, message);
  send_frame(&f, R_FATAL, 0);
  fprintf(stderr, "asb-step-runner: %s\n", message);
  steps_kill_all();
  _exit(2);
}

void frame_start(struct frame *f) { f->len = HEADER_BYTES; }

void put_u32(struct frame *f, uint32_t v) {
  if (f->len + 4 > sizeof f->bytes) {
    return;
  }
  uint8_t *p = f->bytes + f->len;
  p[0] = v >> 24;
  p[1] = v >> 16;
  p[2] = v >> 8;
  p[3] = v;
  f->len += 4;
}

void put_u64(struct frame *f, uint64_t v) {
  put_u32(f, (uint32_t)(v >> 32));
  put_u32(f, (uint32_t)v);
}

void put_bytes(struct frame *f, const void *data, size_t len) {
  if (len > sizeof f->bytes - f->len) {
    len = sizeof f->bytes - f->len;
  }
  memcpy(f->bytes + f->len, data, len);
  f->len += len;
}

void put_str(struct frame *f, const char *s) {
  size_t len = strlen(s);
  size_t room = sizeof f->bytes - f->len;
  if (room < 4) {
    return;
  }
  if (len > room - 4) {
    len = room - 4;
  }
  put_u32(f, (uint32_t)len);
  put_bytes(f, s, len);
}

static void write_all(const uint8_t *p, size_t len) {
  while (len > 0) {
    ssize_t n = write(out_fd, p, len);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      /* The host is gone: nothing more can be reported; stop what runs. */
      steps_kill_all();
      _exit(3);
    }
    p += n;
    len -= (size_t)n;
  }
}

void send_frame(struct frame *f, uint8_t type, uint32_t id) {
  uint32_t payload = (uint32_t)(f->len - HEADER_BYTES);
  uint8_t *h = f->bytes;
  h[0] = payload >> 24;
  h[1] = payload >> 16;
  h[2] = payload >> 8;
  h[3] = payload;
  h[4] = type;
  h[5] = id >> 24;
  h[6] = id >> 16;
  h[7] = id >> 8;
  h[8] = id;
  pthread_mutex_lock(&send_lock);
  write_all(f->bytes, f->len);
  pthread_mutex_unlock(&send_lock);
}

void send_simple(uint8_t type, uint32_t id, const void *data, size_t len) {
  struct frame *f = malloc(sizeof *f);
  if (f == NULL) {
    _exit(4);
  }
  frame_start(f);
  put_bytes(f, data, len);
  send_frame(f, type, id);
  free(f);
}

void send_refused(uint32_t id, const struct refusal *why, const char *what) {
  struct frame *f = malloc(sizeof *f);
  if (f == NULL) {
    _exit(4);
  }
  char text[512];
  if (why->error != 0) {
    snprintf(text, sizeof text, "%s: %s", what, strerror(why->error));
  } else {
    snprintf(text, sizeof text, "%s", what);
  }
  frame_start(f);
  put_u32(f, (uint32_t)why->reason);
  put_u32(f, (uint32_t)why->segment);
  put_str(f, text);
  send_frame(f, R_REFUSED, id);
  free(f);
}

void send_end_u64(uint32_t id, uint64_t value) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) {
    b[i] = (uint8_t)(value >> (56 - 8 * i));
  }
  send_simple(R_END, id, b, sizeof b);
}

uint32_t get_u32(struct reader *r) {
  if (r->len - r->pos < 4 || r->pos > r->len) {
    r->bad = 1;
    r->pos = r->len;
    return 0;
  }
  const uint8_t *p = r->p + r->pos;
  r->pos += 4;
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint64_t get_u64(struct reader *r) {
  uint64_t high = get_u32(r);
  return high << 32 | get_u32(r);
}

/* A length-prefixed string, copied and NUL-terminated; NULL (and bad) if it holds a NUL. */
char *get_str(struct reader *r) {
  uint32_t len = get_u32(r);
  if (r->bad || len > r->len - r->pos) {
    r->bad = 1;
    return NULL;
  }
  if (memchr(r->p + r->pos, 0, len) != NULL) {
    r->bad = 1;
    return NULL;
  }
  char *s = malloc((size_t)len + 1);
  if (s == NULL) {
    _exit(4);
  }
  memcpy(s, r->p + r->pos, len);
  s[len] = 0;
  r->pos += len;
  return s;
}

static int segment_ok(const char *s) {
  size_t len = strlen(s);
  return len > 0 && len <= MAX_SEGMENT_BYTES && strchr(s, '/') == NULL && strcmp(s, ".") != 0
         && strcmp(s, "..") != 0;
}

/* A path as the host sends it: a count, then that many segments. 0 when it is malformed. */
int get_path(struct reader *r, struct path *out) {
  out->count = 0;
  out->segments = NULL;
  uint32_t count = get_u32(r);
  if (r->bad || count > MAX_SEGMENTS) {
    r->bad = 1;
    return 0;
  }
  out->segments = calloc(count + 1, sizeof(char *));
  if (out->segments == NULL) {
    _exit(4);
  }
  for (uint32_t i = 0; i < count; i++) {
    char *s = get_str(r);
    if (s == NULL || !segment_ok(s)) {
      free(s);
      r->bad = 1;
      free_path(out);
      return 0;
    }
    out->segments[out->count++] = s;
  }
  return 1;
}

void free_path(struct path *p) {
  for (int i = 0; i < p->count; i++) {
    free(p->segments[i]);
  }
  free(p->segments);
  p->segments = NULL;
  p->count = 0;
}

static void dispatch(uint8_t type, uint32_t id, const uint8_t *payload, size_t len) {
  struct reader r = {payload, len, 0, 0};
  switch (type) {
    case T_EXEC: op_exec(id, &r); break;
    case T_STDIN: op_stdin(id, &r, 0); break;
    case T_STDIN_END: op_stdin(id, &r, 1); break;
    case T_KILL: op_kill(id); break;
    case T_STAT: op_stat(id, &r); break;
    case T_LIST: op_list(id, &r); break;
    case T_READ: op_transfer(id, 0, &r); break;
    case T_WALK: op_transfer(id, 1, &r); break;
    case T_MKDIR: op_mkdir(id, &r); break;
    case T_PUT: op_put(id, &r); break;
    case T_PUT_DATA: op_put_data(id, &r); break;
    case T_PUT_END: op_put_end(id, &r); break;
    case T_CREDIT: op_credit(id, &r); break;
    case T_CANCEL: op_cancel(id); break;
    case T_BYE:
      steps_kill_all();
      _exit(0);
    default: {
      char message[80];
      snprintf(message, sizeof message, "unknown frame type 0x%02x from the host", type);
      fatal(message);
    }
  }
  if (r.bad) {
    char message[80];
    snprintf(message, sizeof message, "malformed frame of type 0x%02x from the host", type);
    fatal(message);
  }
}

/* Reads what the host sent and handles every whole frame in it. */
static void read_host(uint8_t *buffer, size_t *held) {
  ssize_t n = read(in_fd, buffer + *held, HEADER_BYTES + MAX_PAYLOAD - *held);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
    return;
  }
  if (n <= 0) {
    /* The host closed the stream: the session is over. */
    steps_kill_all();
    _exit(0);
  }
  *held += (size_t)n;
  size_t at = 0;
  while (*held - at >= HEADER_BYTES) {
    const uint8_t *h = buffer + at;
    uint32_t len = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
    if (len > MAX_PAYLOAD) {
      fatal("a frame from the host is larger than 65536 bytes");
    }
    if (*held - at < HEADER_BYTES + len) {
      break;
    }
    uint32_t id = (uint32_t)h[5] << 24 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 8 | h[8];
    dispatch(h[4], id, h + HEADER_BYTES, len);
    at += HEADER_BYTES + len;
  }
  memmove(buffer, buffer + at, *held - at);
  *held -= at;
}

static int number(const char *s) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == 0 || *end != 0 || v < 0 || v > 0x7fffffff) {
    usage();
  }
  return (int)v;
}

/* Chroot, then become the workload's user for good: no groups, no capabilities, no new ones. */
static void become(const char *root, int uid, int gid) {
  if (root != NULL && (chroot(root) != 0 || chdir("/") != 0)) {
    perror("asb-step-runner: chroot");
    exit(70);
  }
  if (uid < 0) {
    return;
  }
  for (int cap = 0; cap < 64; cap++) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
      perror("asb-step-runner: dropping the capability bounding set");
      exit(70);
    }
  }
  if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0) {
    perror("asb-step-runner: switching to the workload's user");
    exit(70);
  }
  uid_t r, e, s;
  if (getresuid(&r, &e, &s) != 0 || r != (uid_t)uid || e != (uid_t)uid || s != (uid_t)uid
      || setuid(0) == 0) {
    fprintf(stderr, "asb-step-runner: still able to become root; refusing to run\n");
    exit(70);
  }
}

/*
 * Whether a SIGTERM stops the runner (its steps killed, exit 143). As a container's first process
 * (a Kubernetes pod's agent container) it is the namespace's init: the kubelet's SIGTERM comes from
 * outside the pid namespace (sender pid 0) and stops it; one a step sends from inside is ignored,
 * as the kernel ignores a SIGKILL a process sends its own init, so no step ends the session by a
 * signal. Elsewhere SIGTERM stops it from anyone, as its default action would have.
 */
static int terminate_on(const struct signalfd_siginfo *info) {
  return getpid() != 1 || info->ssi_pid == 0;
}

void drain_signals(int sfd) {
  struct signalfd_siginfo info;
  while (read(sfd, &info, sizeof info) == (ssize_t)sizeof info) {
    if (info.ssi_signo == SIGTERM && terminate_on(&info)) {
      steps_kill_all();
      _exit(143);
    }
  }
}

int main(int argc, char **argv) {
  const char *workspace = NULL, *root = NULL, *listen_on = NULL;
  int uid = -1, gid = -1, fds_given = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--no-openat2") == 0) {
      use_openat2 = 0;
      continue;
    }
    if (v == NULL) {
      usage();
    }
    i++;
    if (strcmp(a, "--workspace") == 0) workspace = v;
    else if (strcmp(a, "--in") == 0) in_fd = number(v), fds_given = 1;
    else if (strcmp(a, "--out") == 0) out_fd = number(v), fds_given = 1;
    else if (strcmp(a, "--listen") == 0) listen_on = v;
    else if (strcmp(a, "--chroot") == 0) root = v;
    else if (strcmp(a, "--uid") == 0) uid = number(v);
    else if (strcmp(a, "--gid") == 0) gid = number(v);
    else if (strcmp(a, "--cgroup-fd") == 0) cgroup_fd = number(v);
    else usage();
  }
  if (workspace == NULL || (uid < 0) != (gid < 0) || uid == 0
      || (listen_on != NULL && (fds_given || !listen_spec_ok(listen_on)))) {
    usage();
  }
  if (getuid() == 0) {
    /* Only root may lower it; the steps raise theirs back to 0 (steps.c). */
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      if (write(fd, "-1000", 5) < 0) {
        /* A container may forbid it; the runner then takes its chances with the OOM killer. */
      }
      close(fd);
    }
  }
  become(root, uid, gid);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    perror("asb-step-runner: prctl");
    exit(70);
  }
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    if (errno != EINVAL) {
      perror("asb-step-runner: prctl(PR_SET_CHILD_SUBREAPER)");
      exit(70);
    }
    /* gVisor (some releases) has no subreapers: what a step orphans goes to the sandbox's init
       instead of being reaped here; a step's process group is killed at its end all the same. */
    fprintf(stderr, "asb-step-runner: no child subreaper here (EINVAL); orphans go to init\n");
  }
  workspace_fd = open(workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (workspace_fd < 0) {
    perror("asb-step-runner: opening the workspace");
    exit(66);
  }
  if (cgroup_fd >= 0 && fcntl(cgroup_fd, F_SETFD, FD_CLOEXEC) != 0) {
    perror("asb-step-runner: cgroup fd");
    exit(66);
  }
  signal(SIGPIPE, SIG_IGN);
  sigset_t children;
  sigemptyset(&children);
  sigaddset(&children, SIGCHLD);
  sigaddset(&children, SIGTERM);
  /* Blocked before any thread exists, so every thread inherits it and only signalfd sees it. */
  pthread_sigmask(SIG_BLOCK, &children, NULL);
  int sfd = signalfd(-1, &children, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    perror("asb-step-runner: signalfd");
    exit(71);
  }
  if (listen_on != NULL) {
    /* Taken before the greeting, so before any step exists: no step can be the one connection. */
    in_fd = out_fd = listen_once(listen_on, sfd);
  }
  fcntl(in_fd, F_SETFD, FD_CLOEXEC);
  fcntl(out_fd, F_SETFD, FD_CLOEXEC);
  steps_init(environ);

  struct frame hello;
  frame_start(&hello);
  put_u32(&hello, PROTOCOL_VERSION);
  put_u32(&hello, use_openat2 ? 1 : 0);
  put_u32(&hello, MAX_STEPS);
  put_u32(&hello, MAX_PAYLOAD);
  send_frame(&hello, R_HELLO, 0);

  static uint8_t buffer[HEADER_BYTES + MAX_PAYLOAD];
  size_t held = 0;
  struct pollfd fds[2 + 3 * MAX_STEPS];
  for (;;) {
    fds[0] = (struct pollfd){.fd = in_fd, .events = POLLIN};
    fds[1] = (struct pollfd){.fd = sfd, .events = POLLIN};
    int deadline = -1;
    int count = 2 + steps_poll_fds(fds + 2, 3 * MAX_STEPS, &deadline);
    int ready = poll(fds, (nfds_t)count, deadline);
    if (ready < 0 && errno != EINTR) {
      fatal("poll failed");
    }
    if (ready > 0 && fds[1].revents) {
      drain_signals(sfd);
    }
    if (ready <= 0) {
      for (int i = 0; i < count; i++) fds[i].revents = 0;
    }
    /* Reaping comes first so that a step's exit is seen with whatever output it left. */
    steps_reap();
    /* Also after a time-out: that is when a step whose pipes a stray process holds open ends. */
    steps_after_poll(fds + 2, count - 2);
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      read_host(buffer, &held);
    }
  }
}
